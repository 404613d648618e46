"""Print the requirements of verifiers' chat harness, one per line, read from its own PEP 723
script header: what `make test-verifiers` downloads into the wheelhouse uv installs it from offline
(so the list follows whatever verifiers version is installed)."""

import re
import tomllib

from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE

BLOCK = r"(?m)^# /// script$\s(?P<content>(^#(| .*)$\s)+)^# ///$"
"""The reference regular expression of PEP 723 for a script's metadata block."""


def requirements(source: str) -> list[str]:
    match = re.search(BLOCK, source)
    if match is None:
        raise SystemExit("verifiers' chat harness has no `# /// script` block: its requirements cannot be read")
    toml = "".join(line[2:] if line.startswith("# ") else line[1:]
                   for line in match.group("content").splitlines(keepends=True))
    return tomllib.loads(toml).get("dependencies", [])


if __name__ == "__main__":
    print("\n".join(requirements(CHAT_PROGRAM_SOURCE)))
