"""The README's Python example, as a user would paste it: it must run and
print an error at the level the README states."""

import contextlib
import io
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    """The first ```python block of the README's "## Python" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Python\n", 1)
    assert len(section) == 2, "README.md has no '## Python' section"
    match = re.search(r"```python\n(.*?)```", section[1], re.S)
    assert match, "the Python section has no ```python example"
    return match.group(1)


def test_the_example_is_valid_python():
    compile(readme_example(), "README.md", "exec")


@pytest.mark.gpu
def test_the_example_runs_and_prints_a_small_error():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(readme_example(), "README.md", "exec"), {})
    printed = out.getvalue().split()
    assert printed, "the example prints the relative error"
    assert float(printed[-1]) < 1e-5, out.getvalue()  # the README says ~1e-7
