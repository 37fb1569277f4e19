#!/usr/bin/env bash
# What a user gets from a plain 'pip install': build the wheel from this tree, install it
# WITHOUT extras into a fresh venv, and run, from an empty directory with a fresh HOME:
#   - an import of every module a plain install reaches (all but the extras' own modules);
#   - every command's and subcommand's --help;
#   - the shipped files: 'config sample' is the packaged config and loads, each file prints;
#   - against the fake cloud ('consolidator fake-cloud serve --bmc', the bundled scenario):
#     db upgrade, snapshot, plan, then listings in each -f format (table, json, yaml, value,
#     csv), each output parsed;
#   - a PostgreSQL URL without the [postgresql] extra, and a MariaDB/MySQL URL without the
#     [mysql] extra: one line naming the extra, exit 2.
# Every check runs even after one fails; the last line says how many failed.
#
# Usage: tools/check_wheel.sh [WHEEL]     (default: build one from this tree)
# Env:   PYTHON (default python3), KEEP=1 to keep the work directory, PIP_ARGS for pip.
# .ci/run runs it; it needs the package registry (the install), nothing else. The Python
# checks are tools/wheel_checks.py, run by the installed wheel's interpreter.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/consolidator-wheel.XXXXXX)
VENV=$WORK/venv
CHECKS=$ROOT/tools/wheel_checks.py
SERVE_PID=
STARTED=$SECONDS
checks=0
failed=()

cleanup() {
    if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
        kill "$SERVE_PID" 2>/dev/null
        wait "$SERVE_PID" 2>/dev/null
    fi
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

phase() { echo "== $* ($((SECONDS - STARTED)) s)"; }

# check NAME COMMAND...: run it, count it, keep its output when it fails.
check() {
    local name=$1; shift
    checks=$((checks + 1))
    if ! "$@" >"$WORK/out" 2>"$WORK/err"; then
        failed+=("$name")
        echo "FAILED: $name" >&2
        sed 's/^/    /' "$WORK/out" "$WORK/err" | tail -n 15 >&2
    fi
}

die() { echo "check_wheel: $*" >&2; exit 1; }

# --- the wheel -------------------------------------------------------------------------
phase "a fresh venv ($PYTHON)"
"$PYTHON" -m venv "$VENV" || die "cannot create a venv with $PYTHON"
PIP=("$VENV/bin/python" -m pip -q --disable-pip-version-check ${PIP_ARGS:-})
WHEEL=${1:-}
if [ -z "$WHEEL" ]; then
    phase "building the wheel"
    # From a copy of what the build reads, so the tree gets no build/ or egg-info.
    mkdir -p "$WORK/src" "$WORK/dist"
    for part in setup.cfg pyproject.toml README.rst consolidator setup.py MANIFEST.in; do
        if [ -e "$ROOT/$part" ]; then cp -r "$ROOT/$part" "$WORK/src/"; fi
    done
    find "$WORK/src" -name __pycache__ -prune -exec rm -rf {} +
    "${PIP[@]}" wheel --no-deps -w "$WORK/dist" "$WORK/src" || die "the wheel does not build"
    WHEEL=$(ls "$WORK"/dist/consolidator-*.whl)
fi
echo "wheel: $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"
phase "pip install the wheel, no extras"
"${PIP[@]}" install "$WHEEL" || die "the wheel does not install"

# From here on: the installed command, an empty directory, a fresh HOME, no config.
export PATH="$VENV/bin:$PATH" HOME="$WORK/home"
export CONSOLIDATOR_DB_URL="sqlite:///$WORK/consolidator.db"
unset OS_CLOUD OS_CLIENT_CONFIG_FILE CONSOLIDATOR_BMC_FILE PYTHONPATH
mkdir -p "$HOME" "$WORK/run" && cd "$WORK/run" || die "no work directory"
PY="$VENV/bin/python"
command -v consolidator | grep -q "^$VENV/" || die "consolidator is not the venv's"

# --- what a plain install reaches ------------------------------------------------------
phase "imports, version, --help"
check "every module a plain install reaches imports" "$PY" "$CHECKS" imports
version=$("$PY" -c 'from importlib.metadata import version; print(version("consolidator"))')
check "consolidator --version is the metadata's ($version)" \
    bash -c "consolidator --version | grep -qF -- '$version'"
"$PY" "$CHECKS" commands >"$WORK/commands" || die "cannot list the commands"
while read -r -u 3 -a words; do
    check "consolidator ${words[*]} --help" \
        bash -c 'consolidator "$@" --help | grep -q "^Usage: consolidator"' _ "${words[@]}"
done 3<"$WORK/commands"
echo "$(wc -l <"$WORK/commands") commands and groups"

# --- the shipped files -----------------------------------------------------------------
phase "shipped files"
check "config sample is the packaged sample config, and it loads" "$PY" "$CHECKS" sample
for name in bmc.yaml consolidator.service prometheus/recording-rules.yml; do
    check "config sample $name" bash -c "consolidator config sample $name | grep -q ."
done

# --- against the fake cloud ------------------------------------------------------------
phase "the fake cloud"
scenario=$("$PY" -c 'from consolidator.demo import bundled_scenario; print(bundled_scenario())')
consolidator fake-cloud serve --scenario "$scenario" --bmc \
    --write-clouds-yaml "$WORK/clouds.yaml" --write-bmc-yaml "$WORK/bmc.yaml" \
    >"$WORK/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 600); do
    if [ -s "$WORK/clouds.yaml" ] && [ -s "$WORK/bmc.yaml" ]; then break; fi
    kill -0 "$SERVE_PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; die "the fake cloud died"; }
    sleep 0.5
done
[ -s "$WORK/bmc.yaml" ] || die "the fake cloud wrote no clouds.yaml/bmc.yaml in 300 s"
export OS_CLIENT_CONFIG_FILE="$WORK/clouds.yaml" OS_CLOUD=fake
export CONSOLIDATOR_BMC_FILE="$WORK/bmc.yaml"

check "db upgrade" consolidator db upgrade
check "snapshot" bash -c "consolidator snapshot >'$WORK/snapshot'"
snap=$(tail -n 1 "$WORK/snapshot")
check "snapshot printed an id ($snap)" test -n "$snap"
check "plan -a firstfit" consolidator plan --snapshot "$snap" -a firstfit

# Each listing, and whether it has rows by now (the journal of a proposed plan may be empty).
LISTINGS=("algorithms:rows" "config files:rows" "hosts list:rows" "snapshots list:rows"
          "plans list:rows" "journal:any")
phase "listings in each format: ${LISTINGS[*]%%:*}"
for entry in "${LISTINGS[@]}"; do
    listing=${entry%%:*} rows=${entry##*:}
    for fmt in table json yaml value csv; do
        check "$listing -f $fmt" bash -c "consolidator $listing -f $fmt >'$WORK/listing' &&
            '$PY' '$CHECKS' listing $fmt '$WORK/listing' $rows"
    done
done

# --- a PostgreSQL URL without the extra ------------------------------------------------
phase "no [postgresql] extra"
check "a postgresql URL names the [postgresql] extra in one line, exit 2" bash -c '
    consolidator --db-url postgresql://u@127.0.0.1:9/x db upgrade 2>err >/dev/null
    rc=$?; [ "$rc" = 2 ] && [ "$(wc -l <err)" = 1 ] && grep -q "consolidator\[postgresql\]" err'
phase "no [mysql] extra"
check "a mysql URL names the [mysql] extra in one line, exit 2" bash -c '
    consolidator --db-url mysql://u@127.0.0.1:9/x db upgrade 2>err >/dev/null
    rc=$?; [ "$rc" = 2 ] && [ "$(wc -l <err)" = 1 ] && grep -q "consolidator\[mysql\]" err'

phase "done"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "wheel check: ${#failed[@]} of $checks checks FAILED in $((SECONDS - STARTED)) s:" >&2
    printf '  %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "wheel check: all $checks checks passed in $((SECONDS - STARTED)) s"
