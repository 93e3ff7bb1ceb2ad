"""pytest.raises for the package's argument errors, shared by the argument tests."""

import pytest

import fp4moe


def refuses(function, argument, fragment=""):
    """pytest.raises for an InvalidArgumentError of `function` naming `argument`
    (its rule holding the regex `fragment`)."""
    return pytest.raises(fp4moe.InvalidArgumentError, match=rf"^{function}: argument '{argument}': .*{fragment}")
