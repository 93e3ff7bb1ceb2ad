"""Exceptions raised by fp4moe.

Errors of the C++ library reach Python with the library's message unchanged
("<function>: argument '<argument>': <rule>" for an invalid argument). The
checks this package makes on torch tensors before calling the library (device,
dtype, shape, contiguity) raise the same exception types with messages in the
same form.
"""


class Fp4moeError(Exception):
    """Base of every exception fp4moe raises."""


class InvalidArgumentError(Fp4moeError, ValueError):
    """An argument broke a documented rule; nothing was launched or written."""


class CudaError(Fp4moeError, RuntimeError):
    """A CUDA runtime call failed. ``cuda_error`` is the cudaError_t code."""

    def __init__(self, message: str, cuda_error: int = 0):
        super().__init__(message)
        self.cuda_error = cuda_error


class OutOfMemoryError(Fp4moeError, MemoryError):
    """The library could not allocate host memory."""


class LibraryError(Fp4moeError, RuntimeError):
    """Any other error the library reports, e.g. a split-K call whose
    workspace would have to grow during CUDA-graph capture."""


class InternalError(Fp4moeError, RuntimeError):
    """Any other failure inside the library."""


def invalid_argument(function: str, argument: str, rule: str, got=None) -> InvalidArgumentError:
    """An InvalidArgumentError worded like the C++ library's fp4moe::InvalidArgument."""
    message = f"{function}: argument '{argument}': {rule}"
    if got is not None:
        message += f" (got {got})"
    return InvalidArgumentError(message)
