"""`colony-config`: the built-in configs, listed, shown, or written out to edit.

    colony-config list                      # name, the command it is for, what it is
    colony-config show quickstart           # print the YAML
    colony-config write quickstart my.yaml  # a copy to edit; then colony-train --config my.yaml

Every trainer also takes a built-in config by name: `colony-train --config quickstart`,
`colony-zero --config zero_quickstart`, `colony-train-rllib --config rllib_ppo`.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from pathlib import Path

from .cli import console_script, report_error
from .shipped import builtin_configs

_error = functools.partial(report_error, "colony-config")

_COMMAND_RE = re.compile(r"\b(colony-train-rllib|colony-zero|colony-distill|colony-train)\b")


def describe(path: Path) -> tuple[str, str]:
    """(the command a config is for, its first comment line) read from the file's header comment."""
    header = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line.lstrip("# ").rstrip())
    found = _COMMAND_RE.search(" ".join(header))
    summary = header[0] if header else ""
    return (found.group(1) if found else "?"), summary


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="colony-config", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n\n")[1:2]))
    sub = p.add_subparsers(dest="action", required=True, metavar="{list,show,write}")
    sub.add_parser("list", help="the built-in configs: name, command, summary")
    show = sub.add_parser("show", help="print a built-in config")
    show.add_argument("name")
    write = sub.add_parser("write", help="copy a built-in config to a file to edit")
    write.add_argument("name")
    write.add_argument("path", nargs="?", help="where to write it (default NAME.yaml here); never overwritten")
    return p


@console_script
def main(argv: list[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    if args.action == "list":
        rows = [(name, *describe(path)) for name, path in builtin_configs().items()]
        width = max(len(r[0]) for r in rows)
        cmd_width = max(len(r[1]) for r in rows)
        for name, command, summary in rows:
            print(f"{name:<{width}}  {command:<{cmd_width}}  {summary}")
        return 0
    configs = builtin_configs()
    if args.name not in configs:
        return _error(f"no built-in config named {args.name[:200]!r}; built-in configs: {', '.join(configs)}")
    source = configs[args.name]
    if args.action == "show":
        sys.stdout.write(source.read_text(encoding="utf-8"))
        return 0
    target = Path(args.path or f"{args.name}.yaml")
    try:
        with open(target, "x", encoding="utf-8") as f:  # "x": an existing file is never overwritten
            f.write(source.read_text(encoding="utf-8"))
    except FileExistsError:
        return _error(f"{str(target)[:200]!r} exists; give another path (nothing was written)")
    except OSError as e:
        return _error(f"cannot write {str(target)[:200]!r}: {e.strerror or e}")
    command = describe(source)[0]
    print(f"wrote {target}; edit it, then: {command} --config {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
