#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# settings.undeclared: every PORTICO_* name the code uses must be declared (common/settings.hpp),
# i.e. listed by `portico-info --json`; and C++ code must read them through the declarations. The
# client libraries' GASNET_*, UPC_* and PSM2_* variables likewise, and the launchers' variables the
# bootstrap reads; and no library may set a PORTICO_* variable.
#   check_declared.sh SOURCE_DIR PORTICO_INFO
# A "use" is a string literal that is exactly a variable name ("PORTICO_X"), as passed to getenv,
# the env helpers, setenv lists and the declarations themselves, in src/, tools/ and bench/.
set -eu
src=$1
info=$2
cd "$src"

declared_all=$("$info" --json | grep -oE '"name":"[A-Z][A-Z0-9_]*"' | sed 's/"name":"\(.*\)"/\1/' | sort -u)
if ! printf '%s\n' "$declared_all" | grep -q '^PORTICO_'; then
    echo "portico-info --json listed no PORTICO_* variable" >&2
    exit 1
fi
status=0
sources() { grep -r --include='*.cpp' --include='*.hpp' --include='*.c' --include='*.h' "$@"; }

# listed WHY NAME...: each name must be among portico-info's, else WHY is said about it.
listed() {
    why=$1
    shift
    for name in "$@"; do
        if ! printf '%s\n' "$declared_all" | grep -qx "$name"; then
            echo "$name: $why" >&2
            status=1
        fi
    done
}
# refuse WHY FOUND: FOUND (file:line lines of a search) must be empty, else WHY and FOUND are said.
refuse() {
    if [ -n "$2" ]; then
        echo "$1:" >&2
        echo "$2" >&2
        status=1
    fi
}

used=$(sources -hoE '"PORTICO_[A-Z0-9_]+"' src tools bench | tr -d '"' | sort -u)
# shellcheck disable=SC2086 # one word per name
listed "used but not declared (declare it in its layer's settings table, registered with portico_settings_table)" \
    $used

# Reading a declared variable around its declaration would skip its parsing and range check.
# bench/gasnet is a C program of GASNet's API, which only shows the variable it was run with.
refuse "PORTICO_* read directly instead of through its declaration (kName.get())" \
    "$(sources -nE '(getenv|env_u64|env_str)[[:space:]]*\([[:space:]]*"PORTICO_' src tools bench |
       grep -v '^bench/gasnet/' || true)"

# The client libraries' own variables (GASNET_*, UPC_*, PSM2_*) are declared too, in their
# layer's table (src/gasnet/gasnet_settings.hpp, ...), and read through the declarations: a
# getenv of such a name in src/ reads a variable portico-info does not list, or bypasses its check.
refuse "a client's variable read directly (declare it in the client's <name>_settings.hpp, read it with kName.get())" \
    "$(sources -nE '(getenv[a-z_]*|gasnett_getenv[a-z_]*)[[:space:]]*\([[:space:]]*"(GASNET|UPC|PSM2)_' src || true)"
client_declared=$(grep -rhoE --include='*_settings.hpp' '"(GASNET|UPC|PSM2)_[A-Z0-9_]+"' src | tr -d '"' | sort -u)
# shellcheck disable=SC2086 # one word per name
listed "declared, but its table is not registered (portico_settings_table) or not listed by portico-info" \
    $client_declared

# The launchers' variables the bootstrap and libpmi read (src/bootstrap/launcher_env.hpp), so that
# portico-info lists every variable Portico reads.
launcher_used=$(sources -hoE '"(PMI|PMIX|SLURM|OMPI|MPI)_[A-Z0-9_]+"' src/bootstrap src/capi | tr -d '"' | sort -u)
# shellcheck disable=SC2086 # one word per name
listed "a launcher's variable read but not declared (src/bootstrap/launcher_env.hpp)" $launcher_used

# A library that sets a PORTICO_* variable changes it for every other Portals client of the process
# and for its children, and races their getenv: clients ask through portico_ext.h instead.
refuse "PORTICO_* set in the environment by a library (use portico_ext.h: portico_set_transport, portico_set_wait_spin_us, ...)" \
    "$(sources -nE '(setenv|putenv)[[:space:]]*\([[:space:]]*"PORTICO_' src || true)"

[ $status -eq 0 ] && echo "$(printf '%s\n' "$used" | wc -l) PORTICO_* names used, $(printf '%s\n' "$client_declared" | wc -l) client and $(printf '%s\n' "$launcher_used" | wc -l) launcher variables: all declared and listed"
exit $status
