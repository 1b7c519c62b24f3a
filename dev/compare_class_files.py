"""Checks that the shipped jar links on an older Spark line: its class files must equal those of the
same sources compiled against that line, method by method.

    python dev/compare_class_files.py SHIPPED.jar BUILT_AGAINST_OLDER_LINE.jar

The only differences allowed are Scala trait forwarders present in one build only: a class mixing in
a Spark trait gets a forwarder for each of the trait's methods (and an object's static mirror class
one for each of those), so a method the trait has in one Spark line and not in the other gives a
forwarder in that line's build alone. windowagg calls none of them (the other build compiled
without them) and that line's Spark does not know them.
Any other difference (a Spark method whose signature differs between the lines, a constant Spark
inlines) means the shipped jar would fail on that line: the script names it and exits 1.
Prints one line: "class files: N compared, M differ only in trait forwarders".
"""

import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# A method header in `javap -c -p` output (two spaces in; a static initializer is "public static {};"),
# and one instruction ("   12: aload_1").
METHOD_HEADER = re.compile(r"^  \S.*\);$|^  \S.*\) throws .*;$|^  \S.*static \{\};$")
INSTRUCTION = re.compile(r"^\s+\d+: (\w+)(.*)$")
LOAD = re.compile(r"^[ailfd]load(_\d)?$")


def methods(class_file: Path) -> dict:
    """Each method's header mapped to its instructions, constant-pool indices (and the padding
    javap sizes by them) left out."""
    text = subprocess.run(["javap", "-c", "-p", str(class_file)], check=True, capture_output=True, text=True).stdout
    found, current = {}, None
    for line in text.splitlines():
        if METHOD_HEADER.match(line):
            current = line.strip()
            found[current] = []
        elif current is not None and INSTRUCTION.match(line):
            op, rest = INSTRUCTION.match(line).groups()
            found[current].append((op, " ".join(re.sub(r"#\d+(,\d+)?", "#", rest).split())))
    return found


def is_trait_forwarder(body: list) -> bool:
    """Loads its arguments, calls a trait's static implementation `Trait.name$`, returns; or, in an
    object's static mirror class, the same through the object's MODULE$."""
    if len(body) < 3 or not body[-1][0].endswith("return"):
        return False
    *loads, (op, target) = body[:-1]
    if loads and loads[0][0] == "getstatic" and ".MODULE$:" in loads[0][1]:
        return op == "invokevirtual" and all(LOAD.match(o) for o, _ in loads[1:])
    return (
        op == "invokestatic"
        and "InterfaceMethod" in target
        and re.search(r"\.\w+\$:\(", target) is not None
        and all(LOAD.match(o) for o, _ in loads)
    )


def differences(shipped: Path, older: Path, work: Path) -> tuple:
    problems, forwarders_only = [], 0
    jars = {}
    for name, jar in (("shipped", shipped), ("older", older)):
        with zipfile.ZipFile(jar) as z:
            jars[name] = {i.filename: z.read(i) for i in z.infolist() if i.filename.endswith(".class")}
            z.extractall(work / name)
    for gone in sorted(jars["shipped"].keys() ^ jars["older"].keys()):
        problems.append(f"{gone}: in one build only")
    same_names = sorted(jars["shipped"].keys() & jars["older"].keys())
    for name in same_names:
        if jars["shipped"][name] == jars["older"][name]:
            continue
        a, b = methods(work / "shipped" / name), methods(work / "older" / name)
        own = []
        for header in sorted(a.keys() | b.keys()):
            if header in a and header in b:
                if a[header] != b[header]:
                    own.append(f"{header} differs")
            else:
                body = a.get(header, b.get(header))
                if not is_trait_forwarder(body):
                    own.append(f"{header} only in the {'shipped' if header in a else 'older'} build")
        if own:
            problems.extend(f"{name}: {p}" for p in own)
        else:
            forwarders_only += 1
    return len(same_names), forwarders_only, problems


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    shipped, older = Path(sys.argv[1]), Path(sys.argv[2])
    for jar in (shipped, older):
        if not jar.is_file():
            print(f"class files: no jar at {jar}", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as work:
        compared, forwarders_only, problems = differences(shipped, older, Path(work))
    print(f"class files: {compared} compared, {forwarders_only} differ only in trait forwarders")
    for p in problems:
        print(f"  {p}")
    if problems:
        print(f"class files: {older.name} differs from {shipped.name}: the shipped jar would not link on that "
              "Spark line; reach the differing Spark API through org.apache.spark.sql.windowagg.SparkInternals")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
