"""dev/compare_class_files.py, which tells whether the shipped jar links on an older Spark line
(dev/test-spark-version): one small Java class built against two versions of a small "Spark" stands
for windowagg built against two Spark lines."""

import os
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "dev", "compare_class_files.py")

# A trait as Scala compiles one (a static implementation and a default method), and a library call.
OLDER_SPARK = {
    "Helper": "interface Helper { static int twice$(Helper self, int x) { return 2 * x; } "
    "default int twice(int x) { return twice$(this, x); } }",
    "Library": "class Library { static int cluster(int keys) { return keys; } }",
}
# The newer line's trait has one more method, and the library call one more parameter.
NEWER_SPARK = {
    "Helper": OLDER_SPARK["Helper"][:-1] + "static boolean exists$(Helper self) { return true; } "
    "default boolean exists() { return exists$(this); } }",
    "Library": "class Library { static int cluster(int keys, boolean spread) { return keys; } }",
}
# windowagg's side: mixes the trait in with Scala's forwarders, one per trait method.
FORWARDERS = "public int twice(int x) { return Helper.twice$(this, x); } "
NEWER_FORWARDERS = FORWARDERS + "public boolean exists() { return Helper.exists$(this); } "


def planner(forwarders, call):
    return f"class Planner implements Helper {{ {forwarders}int plan() {{ return {call}; }} }}"


def build(tmp_path, name, spark, planner_source):
    """Planner compiled against `spark`, alone in a jar (Spark is not in windowagg's jar)."""
    folder = tmp_path / name
    folder.mkdir()
    for cls, source in {**spark, "Planner": planner_source}.items():
        (folder / f"{cls}.java").write_text(source)
    subprocess.run(["javac", "-d", str(folder), *map(str, folder.glob("*.java"))], check=True)
    jar = tmp_path / f"{name}.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.write(folder / "Planner.class", "Planner.class")
    return jar


def compare(shipped, older):
    return subprocess.run([sys.executable, SCRIPT, str(shipped), str(older)], capture_output=True, text=True)


def test_builds_differing_only_in_trait_forwarders_link(tmp_path):
    shipped = build(tmp_path, "newer", NEWER_SPARK, planner(NEWER_FORWARDERS, "twice(3)"))
    older = build(tmp_path, "older", OLDER_SPARK, planner(FORWARDERS, "twice(3)"))
    result = compare(shipped, older)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "class files: 1 compared, 1 differ only in trait forwarders" in result.stdout


def test_a_spark_method_whose_signature_differs_is_named(tmp_path):
    # as ClusteredDistribution's apply, which gained a parameter in Spark 4.3
    shipped = build(tmp_path, "newer", NEWER_SPARK, planner(FORWARDERS, "Library.cluster(3, false)"))
    older = build(tmp_path, "older", OLDER_SPARK, planner(FORWARDERS, "Library.cluster(3)"))
    result = compare(shipped, older)
    assert result.returncode == 1
    assert "Planner.class: int plan(); differs" in result.stdout
    assert "the shipped jar would not link on that Spark line" in result.stdout
