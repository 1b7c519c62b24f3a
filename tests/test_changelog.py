"""CHANGELOG.md keeps up with the build: the version build.sbt builds has an entry, and
dev/versions.sh names the same version. No Spark needed."""

import datetime
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# `ThisBuild / version := "0.4.0"`
BUILD_VERSION = re.compile(r'^ThisBuild\s*/\s*version\s*:=\s*"(?P<version>[^"]+)"', re.MULTILINE)
# `WINDOWAGG_VERSION=0.4.0`
SCRIPTS_VERSION = re.compile(r"^WINDOWAGG_VERSION=(?P<version>\S+)\s*$", re.MULTILINE)
# `## [0.4.0] - Unreleased` or `## [0.3.0] - 2026-11-25`
ENTRY = re.compile(r"^## \[(?P<version>[^\]]+)\] - (?P<when>.+?)\s*$", re.MULTILINE)


def read(path: str) -> str:
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return handle.read()


def one(pattern: re.Pattern, path: str) -> str:
    found = [match.group("version") for match in pattern.finditer(read(path))]
    assert len(found) == 1, f"{path}: expected one version line matching {pattern.pattern!r}, found {found}"
    return found[0]


def entries() -> list:
    """The changelog's release headings, as (version, date or 'Unreleased'), in the file's order."""
    return [(match.group("version"), match.group("when")) for match in ENTRY.finditer(read("CHANGELOG.md"))]


def build_version() -> str:
    return one(BUILD_VERSION, "build.sbt")


def test_the_build_version_has_a_changelog_entry():
    version = build_version()
    versions = [v for v, _ in entries()]
    assert version in versions, (
        f"build.sbt builds {version}, and CHANGELOG.md has no '## [{version}] - ...' heading "
        f"(it has {versions}): say what changed in it, and what a user does about it"
    )


def test_dev_versions_names_the_build_version():
    assert one(SCRIPTS_VERSION, "dev/versions.sh") == build_version(), (
        "dev/versions.sh's WINDOWAGG_VERSION and build.sbt's version differ: bump both together"
    )


def test_entries_are_newest_first_and_dated_once_released():
    listed = entries()
    assert listed, "CHANGELOG.md has no '## [x.y.z] - date' heading"
    numbers = [tuple(int(part) for part in version.split(".")) for version, _ in listed]
    assert numbers == sorted(numbers, reverse=True) and len(set(numbers)) == len(numbers), (
        f"CHANGELOG.md's entries are not newest first, each once: {[v for v, _ in listed]}"
    )
    for position, (version, when) in enumerate(listed):
        if when == "Unreleased":
            assert position == 0, f"[{version}] is Unreleased below a later release"
        else:
            datetime.date.fromisoformat(when)  # YYYY-MM-DD, the release commit's date
