"""Compiling user kernels (``ElementwiseKernel``, ``RawKernel``): ``KernelCompileError`` with the
line and column of the user's own source (the compiler's message relocated from the generated
shader), the pipeline compile that raises it, and the translation of backend errors into the
Python exceptions the user kernels raise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any


from ._backend import kernels
from ._backend.errors import BackendError, BackendErrorKind, restore_exception

__all__ = ["KernelCompileError"]

_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


class KernelCompileError(ValueError):
    """A user kernel's WGSL did not compile.

    Attributes: ``kernel`` (the kernel's name), ``region`` (``'operation'``, ``'preamble'``,
    ``'source'``, or None when the error lies in generated code or has no location), ``line`` and
    ``column`` (1-based, relative to that region; None without a location), ``compiler_message``
    (naga's message with its line numbers rewritten to the region's) and ``source`` (the complete
    WGSL that was compiled).
    """

    def __init__(self, kernel: str, message: str, *, region: str | None, line: int | None,
                 column: int | None, compiler_message: str, source: str) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.region = region
        self.line = line
        self.column = column
        self.compiler_message = compiler_message
        self.source = source

    def __reduce__(self) -> tuple[Any, ...]:
        return restore_exception, (type(self), self.args, self.__dict__)


_LOCATION = re.compile(r"(┌─ )([^\n:]*):(\d+):(\d+)")  # naga's
_TINT_LOCATION = re.compile(r"(^|\s)():(\d+):(\d+)(?= (?:error|warning|note))", re.MULTILINE)  # Tint's
_GUTTER = re.compile(r"^(\s*)(\d+)( │)", re.MULTILINE)


def _marked_locations(text: str, src_lines: Sequence[str]) -> list[tuple[int, int]]:
    """(source line, 1-based column) of every caret annotation (``^^^``) in naga's snippet, in
    order: the numbered line just above a caret line is the one it marks; the caret's column is
    its offset from where that line's source text starts in the numbered line."""
    found = []
    numbered: tuple[int, str] | None = None
    for row in text.split("\n"):
        m = _GUTTER.match(row)
        if m:
            numbered = (int(m.group(2)), row)
            continue
        caret = row.find("^")
        if caret >= 0 and numbered is not None and "│" in row:
            line, shown = numbered
            code = src_lines[line - 1] if 0 < line <= len(src_lines) else ""
            start = len(shown) - len(code) if code and shown.endswith(code) else None
            if start is not None and caret >= start:
                found.append((line, caret - start + 1))
            numbered = None
    return found


def _compile_error(kernel: str, exc: BaseException, source: str,
                   regions: Sequence[tuple[str, int, int]]) -> KernelCompileError:
    """Turn a pipeline-creation failure into a KernelCompileError whose line numbers are relative
    to the user's text. ``regions``: (name, first source line (1-based), line count) of every piece
    of user text in ``source``.

    The location is naga's primary one (``┌─ wgsl:L:C``; Tint's ``:L:C error``) when it lies in user text; otherwise (a
    validation error spans the generated function around the user's operation) the first caret
    annotation that marks user text; otherwise the generated line (region None)."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    text = str(cause)
    head = re.search(r"^\s*In wgpu\w+[^\n]*\n", text, re.MULTILINE)  # wgpu's "Caused by: In wgpuX" header
    raw_detail = (text[head.end():] if head else text).strip()
    src_lines = source.split("\n")

    def where(line: int) -> tuple[str, int] | None:
        for name, first, count in regions:
            if first <= line < first + count:
                return name, line - first + 1
        return None

    def relocate(m: re.Match[str]) -> str:
        line = int(m.group(3))
        mapped = where(line)
        if mapped is None:
            return f"{m.group(1)}generated:{line}:{m.group(4)}"
        return f"{m.group(1)}{mapped[0]}:{mapped[1]}:{m.group(4)}"

    def regutter(m: re.Match[str]) -> str:
        mapped = where(int(m.group(2)))
        number = str(mapped[1]) if mapped else m.group(2)
        return f"{m.group(1)}{number:>{len(m.group(2))}}{m.group(3)}"

    detail = _GUTTER.sub(regutter, _TINT_LOCATION.sub(relocate, _LOCATION.sub(relocate, raw_detail)))
    notes = [row.strip()[2:] for row in raw_detail.split("\n") if row.strip().startswith("= ")]
    summary = re.sub(r"^Shader '[^']*' ", "", detail.split("\n", 1)[0])
    if notes and notes[-1] not in summary:
        summary += f": {notes[-1]}"
    candidates = []
    first_loc = _LOCATION.search(raw_detail) or _TINT_LOCATION.search(raw_detail)
    if first_loc is not None:
        candidates.append((int(first_loc.group(3)), int(first_loc.group(4))))
    candidates += _marked_locations(raw_detail, src_lines)
    region = line = column = None
    place = "pipeline creation"
    for src_line, col in candidates:
        mapped = where(src_line)
        if mapped is not None:
            region, line = mapped
            column = col
            place = f"{region} line {line}, column {column}"
            break
    else:
        if candidates:
            src_line = candidates[0][0]
            snippet = src_lines[src_line - 1].strip() if 0 < src_line <= len(src_lines) else ""
            place = f"generated code line {src_line} ({snippet!r}; the full source is in .source)"
    message = f"kernel {kernel!r}: WGSL error at {place}: {summary}\n{detail}"
    return KernelCompileError(kernel, message, region=region, line=line, column=column,
                              compiler_message=detail, source=source)


def _compile(ctx: Any, name: str, n_storage: int, defines: dict[str, str] | None, kernel: str,
             regions_of: Any, hint: str = "", source: str | None = None) -> Any:
    """The pipeline of template ``name`` with ``defines`` (or of the WGSL ``source``), which the
    context caches; KernelCompileError on failure. ``regions_of(source)`` gives the user-text
    regions of the compiled source."""
    try:
        return ctx.pipeline(name, n_storage, defines, source=source)
    except BackendError as exc:
        if exc.kind is not BackendErrorKind.DEVICE_ERROR:
            raise
        if source is None:
            source = kernels.render(name, defines)
        err = _compile_error(kernel, exc, source, regions_of(source))
        if hint and err.line is None:
            err.args = (f"{err.args[0]}\n{hint}",)
        raise err from None


def _translate(exc: Exception) -> Exception:
    """Backend errors -> Python errors: unsupported -> TypeError, invalid argument -> ValueError."""
    if isinstance(exc, BackendError):
        if exc.kind is BackendErrorKind.UNSUPPORTED:
            return TypeError(exc.message)
        if exc.kind is BackendErrorKind.INVALID_ARGUMENT:
            return ValueError(exc.message)
    return exc
