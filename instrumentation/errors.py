"""The project's one error base: ``IoadvisorError``, raised for what the user gave (a trace, a layout, a profile,
a path, an option) and shown by the CLI as one line; anything else that escapes is a bug and keeps its traceback.

Each area has its subclass (``TraceError``, ``LayoutError``, ``ProfileError``, ...), defined next to the code
that raises it; they stay ``ValueError`` subclasses too, so callers that catch ``ValueError`` still do. This
module sits in the lowest package (instrumentation -> models -> advisor) so that every package can use it.
"""


class IoadvisorError(Exception):
    """Bad input or an impossible request, said in one line naming the file, line or field."""


class InputError(IoadvisorError, ValueError):
    """Bad input of no more specific area (an option, a path, a member of a file)."""


class OutputExistsError(IoadvisorError, FileExistsError):
    """The output path exists and is not replaced (never overwrite a trace or a report unless told to)."""


__all__ = ["InputError", "IoadvisorError", "OutputExistsError"]
