"""Checks of torch tensor arguments, made before anything is launched.

Each public function builds a Checker with its own name; a failed rule raises
InvalidArgumentError worded like the C++ library's errors:
"<function>: argument '<argument>': <rule> (got ...)".
"""

import torch

from .errors import invalid_argument


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _text(part):
    """An error's rule or value: given as is, or as a callable that makes it
    (formatting a shape or strides costs a few microseconds a call, and
    only a failed rule needs it)."""
    return part() if callable(part) else part


class Checker:
    def __init__(self, function: str):
        self.function = function

    def fail(self, argument: str, rule, got=None):
        raise invalid_argument(self.function, argument, _text(rule), _text(got))

    def require(self, ok: bool, argument: str, rule, got=None) -> None:
        """Fails with `rule` unless `ok`; `rule` and `got` may be callables,
        called only on failure."""
        if not ok:
            self.fail(argument, rule, got)

    def tensor(self, t, argument: str, dtypes, *, ndims=None, contiguous=True) -> torch.Tensor:
        """A torch.Tensor of one of `dtypes`, with one of `ndims` dimensions,
        contiguous unless told otherwise."""
        if not isinstance(t, torch.Tensor):
            self.fail(argument, "must be a torch.Tensor", type(t).__name__)
        if t.dtype not in dtypes:
            self.fail(argument, "must have dtype " + " or ".join(dtype_name(d) for d in dtypes), dtype_name(t.dtype))
        if ndims is not None and t.dim() not in ndims:
            want = " or ".join(str(n) for n in ndims)
            self.fail(argument, f"must have {want} dimensions", f"shape {tuple(t.shape)}")
        if contiguous and not t.is_contiguous():
            self.fail(argument, "must be contiguous", f"strides {t.stride()}")
        return t

    def shape(self, t: torch.Tensor, argument: str, shape) -> None:
        if tuple(t.shape) != tuple(shape):
            self.fail(argument, f"must have shape {tuple(shape)}", f"{tuple(t.shape)}")

    def rows_apart(self, t: torch.Tensor, argument: str) -> None:
        """No row stride of 0 (expand() along the rows) with more than one row:
        the library's views read 0 as dense rows, so such a tensor would be
        read or written past its end."""
        self.require(t.shape[0] <= 1 or t.stride(0) != 0, argument,
                     "must not have a row stride of 0 with more than one row (expand() along M: pass .contiguous())",
                     lambda: f"strides {t.stride()}")

    def numel(self, t: torch.Tensor, argument: str, n: int, what: str) -> None:
        self.require(t.numel() == n, argument, lambda: f"must have {n} elements ({what})",
                     lambda: f"{t.numel()}, shape {tuple(t.shape)}")

    def cuda_device(self, named) -> torch.device:
        """All tensors of `named` ({argument: tensor or None}) on one CUDA device; returns it."""
        device = None
        first = None
        for argument, t in named.items():
            if t is None:
                continue
            if t.device.type != "cuda":
                self.fail(argument, "must be a CUDA tensor", f"device {t.device}")
            if device is None:
                device, first = t.device, argument
            elif t.device != device:
                self.fail(argument, f"must be on the device of '{first}' ({device})", f"device {t.device}")
        return device

    def cpu_device(self, named) -> None:
        for argument, t in named.items():
            if t is not None and t.device.type != "cpu":
                self.fail(argument, "must be a CPU tensor (fp4moe.cpu runs on the host)", f"device {t.device}")

    def output_rows(self, out: torch.Tensor, argument: str) -> None:
        """An output written row by row: unit column stride, rows (and groups)
        at least a row (a group) apart."""
        strides = lambda: f"strides {out.stride()}"  # noqa: E731 (made only for an error)
        self.require(out.stride(-1) == 1 or out.shape[-1] <= 1, argument, "must have unit stride in its last dimension",
                     strides)
        if out.dim() >= 2:
            self.require(out.stride(-2) >= out.shape[-1] or out.shape[-2] <= 1, argument,
                         "must have rows at least a row apart (stride(-2) >= shape[-1])", strides)
        if out.dim() == 3:
            self.require(out.stride(0) >= out.shape[1] * out.stride(1) or out.shape[0] <= 1, argument,
                         "must have groups at least a group apart (stride(0) >= shape[1]*stride(1))", strides)


def check_int32(c: Checker, v, argument: str, *, minimum: int = 0) -> int:
    """A Python int that a C int32 argument holds, at least `minimum`."""
    c.require(isinstance(v, int) and not isinstance(v, bool), argument, "must be an int", type(v).__name__)
    c.require(minimum <= v < 2**31, argument, lambda: f"must be in [{minimum}, 2^31)", v)
    return v
