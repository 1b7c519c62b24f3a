"""Prints an sbt repositories file that points sbt and Coursier where Maven points.

Maven's own settings decide: a non-blocked <mirror> of `central` or `*` in the user or global
settings.xml is used; without one, sbt's built-in `maven-central` (the same default Maven has).
"""
import os
import xml.etree.ElementTree as ET


def _settings_files():
    user = os.path.expanduser("~/.m2/settings.xml")
    home = os.environ.get("MAVEN_HOME") or os.environ.get("M2_HOME") or "/usr/share/maven"
    return [p for p in (user, os.path.join(home, "conf", "settings.xml"), "/etc/maven/settings.xml")
            if os.path.isfile(p)]


def _central_mirror():
    for path in _settings_files():
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError:
            continue
        ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
        for mirror in root.iter(f"{ns}mirror"):
            of = (mirror.findtext(f"{ns}mirrorOf") or "").split(",")
            blocked = (mirror.findtext(f"{ns}blocked") or "").strip() == "true"
            url = (mirror.findtext(f"{ns}url") or "").strip()
            if not blocked and url and any(o.strip() in ("central", "*") for o in of):
                return url
    return None


def main():
    mirror = _central_mirror()
    lines = ["[repositories]", "  local"]
    lines.append(f"  maven-mirror: {mirror}" if mirror else "  maven-central")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
