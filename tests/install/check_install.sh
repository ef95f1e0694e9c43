#!/usr/bin/env bash
# `make check-install`: install the checkout into a fresh virtual environment
# outside it, as a user would, and check what that install claims.
#
# 1. `pip install .` adds exactly one top-level name, `junction`, and pulls
#    exactly one dependency, attrs.
# 2. `mypy --strict` passes on a user file importing the installed core (the
#    install ships py.typed), and fails on a planted type error (the check bites).
# 3. The `reference` extra adds hypothesis and rich, no torch, and its CLI runs.
# 4. The pure-Python tiers of the suite (properties, conformance, engine,
#    workloads) pass against the installed package, run from a copy of the
#    checkout without the package's folders, so no test leans on the links.
#
# Needs the package registry (pip fetches setuptools, attrs, mypy, hypothesis,
# rich, pytest). About two minutes. Usage: check_install.sh [PYTHON]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
python="${1:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "check-install: FAIL: $*" >&2; exit 1; }
started=$(date +%s)

# Install from a copy of what the distribution is built from: pip builds in
# the source tree, and its build/ would otherwise land in the checkout.
# The parts: the one list, pyproject.toml's [tool.junction] parts.
parts="$("$python" -c "import tomllib; print(' '.join(tomllib.load(open('$repo/pyproject.toml', 'rb'))['tool']['junction']['parts']))")"
mkdir "$work/src"
cp "$repo/pyproject.toml" "$repo/setup.py" "$repo/README.md" "$repo/LICENSE" "$work/src/"
for folder in junction $parts; do
    cp -R "$repo/$folder" "$work/src/$folder"  # -R keeps junction/'s relative links
done
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
src="$work/src"

"$python" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip --disable-pip-version-check --quiet)
"${pip[@]}" install "$src"

site="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# What the venv holds before the install: pip, setuptools (older Pythons), their helpers.
baseline='^(_distutils_hack|distutils-precedence\.pth|pip|pkg_resources|setuptools)$'
added="$(ls "$site" | grep -Ev "$baseline" | grep -Ev '\.dist-info$' | sort | tr '\n' ' ')"
[[ "$added" == "attr attrs junction " ]] \
    || fail "top-level names added by 'pip install .': '$added' (want: attr attrs junction)"
dists="$("$work/venv/bin/python" -m pip list --format=freeze --disable-pip-version-check \
    | cut -d= -f1 | grep -Evi '^(pip|setuptools)$' | sort | tr '\n' ' ')"
[[ "$dists" == "attrs junction " ]] || fail "distributions installed: '$dists' (want: attrs junction)"
echo "check-install: pip install . -> top-level names: $added; distributions: $dists"

# Run from outside the checkout, so the installed junction is the one imported.
cd "$work"
location="$("$work/venv/bin/python" -c 'import junction.core, os; print(os.path.dirname(junction.core.__file__))')"
[[ "$location" == "$site/junction/core" ]] || fail "junction.core imported from $location"

"${pip[@]}" install "mypy==2.4.1"
cp "$repo/tests/install/user_of_core.py" "$work/user_of_core.py"
"$work/venv/bin/mypy" --strict --no-incremental user_of_core.py \
    || fail "mypy --strict on a user file importing the installed junction.core"
"$work/venv/bin/python" user_of_core.py
printf 'wrong: int = "a string"\n' >> "$work/user_of_core.py"
if "$work/venv/bin/mypy" --strict --no-incremental user_of_core.py > /dev/null; then
    fail "mypy --strict accepted a planted type error: it is not checking the file"
fi
echo "check-install: mypy --strict on a user file importing the installed junction.core: ok"

"${pip[@]}" install "$src[reference]"
if "$work/venv/bin/python" -m pip list --disable-pip-version-check | grep -Ei '^(torch|vllm|triton) '; then
    fail "the reference extra pulled torch, Triton or vLLM"
fi
"$work/venv/bin/junction" fuzz --policy junction --promise replay --seconds 5 --seed 0 \
    > /dev/null 2>&1 \
    || fail "junction fuzz with the reference extra"
echo "check-install: .[reference] installs hypothesis and rich (no torch) and runs the harness: ok"
# The checkout's tracked files minus the package's own folders: `junction`
# can then only resolve to the installed copy.
pytest_pin="$("$python" -c "import tomllib; print(next(p for p in tomllib.load(open('$repo/pyproject.toml', 'rb'))['project']['optional-dependencies']['dev'] if p.startswith('pytest==')))")"
"${pip[@]}" install "$pytest_pin"
mkdir "$work/tests-only"
git -C "$repo" ls-files -z | grep -zvE "^(junction|${parts// /|})/" \
    | (cd "$repo" && xargs -0 cp --parents -t "$work/tests-only")
cd "$work/tests-only"
HYPOTHESIS_PROFILE=check "$work/venv/bin/python" -m pytest -q -p no:cacheprovider -m "not slow" \
    --exhaustive-bound 2 tests/properties tests/conformance tests/engine tests/workloads \
    || fail "the pure-Python tests against the installed package"
echo "check-install: the pure-Python tests pass against the installed package: ok"
echo "check-install: passed in $(( $(date +%s) - started )) s"
