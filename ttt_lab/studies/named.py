"""Named studies: `ttt-lab sweep quickstart` finds sweeps/quickstart.yaml in the working directory's
sweeps/, then in each user config folder's sweeps/ (`--config-dir`, $TTT_LAB_CONFIG_DIR), then in
the package (the shipped studies: sweeps/ of a checkout, ttt_lab/sweeps of a wheel). A name found
in two of these places with different contents is refused: which file ran would depend on where
the command was started."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ttt_lab.studies.spec import StudyError


@dataclass(frozen=True)
class NamedStudy:
    name: str
    path: Path
    origin: str
    """Where it was found: `./sweeps`, `config folder DIR` or `package`."""


def study_folders() -> list[tuple[str, Path]]:
    """(origin, folder) in lookup order; a folder reached twice (a checkout's own sweeps/ from its
    top level) is listed once, under its first origin."""
    from ttt_lab.config.load import studies_dir, user_config_dirs

    candidates = [("./sweeps", Path.cwd() / "sweeps"),
                  *((f"config folder {d}", d / "sweeps") for d in user_config_dirs()),
                  ("package", studies_dir())]
    seen: set[Path] = set()
    out = []
    for origin, folder in candidates:
        real = folder.resolve()
        if real not in seen and folder.is_dir():
            seen.add(real)
            out.append((origin, folder))
    return out


def all_studies() -> dict[str, list[NamedStudy]]:
    """Every named study, by name, each place it was found in lookup order."""
    found: dict[str, list[NamedStudy]] = {}
    for origin, folder in study_folders():
        for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
            found.setdefault(path.stem, []).append(NamedStudy(path.stem, path, origin))
    return dict(sorted(found.items()))


def clashing(places: list[NamedStudy]) -> bool:
    """Several places with different contents (a copy left unchanged is the same study)."""
    return len({p.path.read_bytes() for p in places}) > 1


def find(name: str) -> Path:
    """The file of the named study `name` (`quickstart` or `quickstart.yaml`)."""
    stem = name.removesuffix(".yaml").removesuffix(".yml")
    studies = all_studies()
    places = studies.get(stem)
    if not places:
        raise StudyError(f"no study file {name}. The project's studies (./sweeps, your config folders' sweeps/, the "
                         f"package): {', '.join(f'{n}.yaml' for n in studies) or 'none'}; give one of them by name "
                         "or the path of a study file of your own (`ttt-lab sweep --list` shows where each is).")
    if clashing(places):
        where = "; ".join(f"{p.path} ({p.origin})" for p in places)
        raise StudyError(f"the study name '{stem}' is defined differently in more than one place: {where}. Give the "
                         f"file's path instead of its name (e.g. `ttt-lab sweep {places[0].path}`), or rename one "
                         "of them.")
    return places[0].path


def study_path(path: Path) -> Path:
    """`path` when it is a file; else the named study it stands for (`quickstart`, `quickstart.yaml`,
    `sweeps/quickstart.yaml`), so a study is given the same way from any directory."""
    if path.is_file():
        return path
    if str(path.parent) in (".", "sweeps"):
        return find(path.name)
    known = ", ".join(f"{n}.yaml" for n in all_studies()) or "none"
    raise StudyError(f"no study file {path}. The project's studies (`ttt-lab sweep --list`): {known}; give one of "
                     "them by name or the path of a study file of your own.")


def question(path: Path) -> str:
    """The study file's `question:` (its first line), or '' when the file cannot be read as YAML."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return ""
    found = data.get("question") if isinstance(data, dict) else None
    return str(found).strip().splitlines()[0] if found else ""
