#!/bin/sh
# settings.undeclared: every PORTICO_* name the code uses must be declared (common/settings.hpp),
# i.e. listed by `portico-info --json`; and C++ code must read them through the declarations.
#   check_declared.sh SOURCE_DIR PORTICO_INFO
# A "use" is a string literal that is exactly a variable name ("PORTICO_X"), as passed to getenv,
# the env helpers, setenv lists and the declarations themselves, in src/, tools/ and bench/.
set -eu
src=$1
info=$2
cd "$src"

declared=$("$info" --json | grep -o '"name":"PORTICO_[A-Z0-9_]*"' | sed 's/"name":"\(.*\)"/\1/' | sort -u)
if [ -z "$declared" ]; then
    echo "portico-info --json listed no PORTICO_* variable" >&2
    exit 1
fi

status=0
used=$(grep -rhoE --include='*.cpp' --include='*.hpp' --include='*.c' --include='*.h' \
           '"PORTICO_[A-Z0-9_]+"' src tools bench | tr -d '"' | sort -u)
for name in $used; do
    if ! printf '%s\n' "$declared" | grep -qx "$name"; then
        echo "undeclared setting $name (declare it next to its reader and list it in" \
             "tools/portico-info/settings_catalog.hpp):" >&2
        grep -rnF --include='*.cpp' --include='*.hpp' --include='*.c' --include='*.h' "\"$name\"" src tools bench >&2
        status=1
    fi
done

# Reading a declared variable around its declaration would skip its parsing and range check.
# GASNet (src/gasnet, bench/gasnet) is a client of the public API and has no declarations to use.
bypass=$(grep -rnE --include='*.cpp' --include='*.hpp' \
             '(getenv|env_u64|env_str)[[:space:]]*\([[:space:]]*"PORTICO_' src tools bench |
         grep -v '^src/gasnet/' | grep -v '^bench/gasnet/' || true)
if [ -n "$bypass" ]; then
    echo "PORTICO_* read directly instead of through its declaration (kName.get()):" >&2
    echo "$bypass" >&2
    status=1
fi

# A library that sets a PORTICO_* variable changes it for every other Portals client of the process
# and for its children, and races their getenv: clients ask through portico_ext.h instead.
leak=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.c' --include='*.h' \
           '(setenv|putenv)[[:space:]]*\([[:space:]]*"PORTICO_' src || true)
if [ -n "$leak" ]; then
    echo "PORTICO_* set in the environment by a library (use portico_ext.h: portico_set_transport," \
         "portico_set_wait_spin_us, ...):" >&2
    echo "$leak" >&2
    status=1
fi

[ $status -eq 0 ] && echo "$(printf '%s\n' "$used" | wc -l) names used, all declared ($(printf '%s\n' "$declared" | wc -l) declared)"
exit $status
