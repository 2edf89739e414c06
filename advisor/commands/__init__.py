"""``ioadvisor`` subcommands, one module each (see advisor/cli.py)."""


def add_profile_option(parser) -> None:
    """``--profile FILE``, shared by every command that uses the cost models."""
    parser.add_argument("--profile", metavar="FILE",
                        help="system profile (default: this machine's from `ioadvisor calibrate`, else the shipped one)")


def add_quiet_option(parser) -> None:
    """``-q/--quiet``: no progress bars (they are shown only on a terminal anyway; ``advisor.progress``)."""
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display on the terminal")
