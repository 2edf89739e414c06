"""``ioadvisor`` subcommands, one module each (see advisor/cli.py)."""
import contextlib


def add_profile_option(parser) -> None:
    """``--profile FILE``, shared by every command that uses the cost models."""
    parser.add_argument("--profile", metavar="FILE",
                        help="system profile (default: this machine's from `ioadvisor calibrate`, else the shipped one)")


def with_progress(description: str, func, *, compiles: bool = False):
    """``func(args)`` inside a progress bar named ``description`` that the work below advances through
    ``advisor.progress.current()``; ``compiles``: also show the first run's compile of the cost model."""
    def run(args):
        from advisor import progress

        with progress.task(description), progress.compiling() if compiles else contextlib.nullcontext():
            return func(args)
    return run


def add_quiet_option(parser) -> None:
    """``-q/--quiet``: no progress bars (they are shown only on a terminal anyway; ``advisor.progress``)."""
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display on the terminal")
