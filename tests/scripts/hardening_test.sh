#!/usr/bin/env bash
# The installed programs carry the hardening CMakeLists.txt gives every target (EOC_HARDENING), read
# from the binaries with binutils alone (readelf, objdump):
#   hardening_test.sh PROGRAM...
#   - PIE: ELF type DYN, and DF_1_PIE in the dynamic section's FLAGS_1;
#   - full RELRO: a GNU_RELRO segment, and every symbol bound at start (BIND_NOW, or DF_1_NOW);
#   - a non-executable stack: a GNU_STACK segment without E (no segment means an executable one);
#   - the stack protector: __stack_chk_fail among the dynamic symbols;
#   - fortify: at least one of glibc's checked functions (__memcpy_chk, __sprintf_chk, ...);
#   - on x86-64, CET: the code built for it (main begins with endbr64, as -fcf-protection makes
#     every function that can be called indirectly), and IBT and SHSTK in .note.gnu.property's x86
#     features where the toolchain can mark a program at all: the linker marks one only when every
#     object it links is marked, and Debian 12's glibc start files (Scrt1.o, crti.o, crtn.o of
#     libc6-dev 2.36) are not. A trivial program built for CET tells which case this is, and the
#     linker's report (-z cet-report=warning) names the objects at fault.
# First it checks itself: a program built with each of those off (EOC_CXX, the project's compiler)
# must fail every check.
set -euo pipefail

[ $# -gt 0 ] || {
  echo "usage: hardening_test.sh PROGRAM..." >&2
  exit 2
}

# check PROGRAM: prints one line for each property PROGRAM lacks; true when it lacks none.
check() {
  local program=$1 name header dynamic segments symbols notes problems=()
  name=$(basename "$program")
  header=$(readelf -hW "$program") || {
    echo "$name: not an ELF file"
    return 1
  }
  dynamic=$(readelf -dW "$program")
  segments=$(readelf -lW "$program")
  symbols=$(readelf --dyn-syms -W "$program" | awk '$7 == "UND" { sub(/@.*/, "", $8); print $8 }')
  notes=$(readelf -nW "$program")

  local type flags1
  type=$(awk -F': *' '$1 ~ /^ *Type$/ { print $2 }' <<<"$header")
  # "0x... (FLAGS_1)  Flags: NOW PIE" and "0x... (FLAGS)  BIND_NOW": the flags, space-separated.
  flags1=$(awk '$2 == "(FLAGS_1)" { $1 = $2 = $3 = ""; print substr($0, 4) }' <<<"$dynamic")
  [[ $type == DYN* && " $flags1 " == *" PIE "* ]] ||
    problems+=("not PIE: type ${type:-?}, FLAGS_1 ${flags1:-absent}")

  local flags
  flags=$(awk '$2 == "(FLAGS)" { $1 = $2 = ""; print substr($0, 3) }' <<<"$dynamic")
  grep -q '^ *GNU_RELRO ' <<<"$segments" || problems+=("no full RELRO: no GNU_RELRO segment")
  [[ " $flags " == *" BIND_NOW "* || " $flags1 " == *" NOW "* ]] || grep -q '(BIND_NOW)' <<<"$dynamic" ||
    problems+=("no full RELRO: symbols bound lazily (no BIND_NOW; FLAGS ${flags:-absent}, FLAGS_1 ${flags1:-absent})")

  # Program headers: Type Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align, Flg three columns
  # wide ("RW ", "RWE").
  local stack
  stack=$(grep -E '^ *GNU_STACK ' <<<"$segments" || true)
  if [[ $stack =~ GNU_STACK\ +(0x[0-9a-f]+\ +){5}([R\ ][W\ ][E\ ]) ]]; then
    [[ ${BASH_REMATCH[2]} != *E* ]] || problems+=("executable stack: GNU_STACK flags '${BASH_REMATCH[2]}'")
  else
    problems+=("executable stack: no GNU_STACK segment")
  fi

  grep -qx '__stack_chk_fail' <<<"$symbols" || problems+=("no stack protector: no __stack_chk_fail")
  local checked
  checked=$(grep -E '^__[a-z0-9_]+_chk$' <<<"$symbols" | grep -vx '__stack_chk_fail' || true)
  [ -n "$checked" ] || problems+=("no fortify: none of glibc's __*_chk functions")

  if grep -q 'Machine: *Advanced Micro Devices X86-64' <<<"$header"; then
    local entry
    entry=$(objdump -d --no-show-raw-insn --disassemble=main "$program" | awk '/<main>:$/ { getline; print $2; exit }')
    [ "$entry" = endbr64 ] || problems+=("no CET code: main begins with '${entry:-nothing (no symbol main)}', not endbr64")
    if [ "$cet_marks" = yes ] && ! marked_for_cet <<<"$notes"; then
      problems+=("no CET: .note.gnu.property's x86 features are '$(features <<<"$notes")', want IBT and SHSTK")
    fi
  fi

  local problem
  for problem in "${problems[@]}"; do
    echo "$name: $problem"
  done
  [ ${#problems[@]} -eq 0 ]
}

features() { sed -n 's/.*x86 feature: *//p' | head -1; }
marked_for_cet() {
  local f
  f=$(features)
  [[ ", $f, " == *", IBT, "* && ", $f, " == *", SHSTK, "* ]]
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cxx=${EOC_CXX:-c++}
cat >"$work/plain.cc" <<'EOF'
#include <cstdio>
#include <cstring>
int main(int argc, char** argv) {
  char copy[16];
  std::strncpy(copy, argc > 1 ? argv[1] : "", sizeof copy - 1);
  copy[sizeof copy - 1] = '\0';
  std::printf("%s\n", copy);
}
EOF

# 0. Whether this toolchain can mark a program for CET at all.
cet_marks=no
if "$cxx" -dumpmachine | grep -q '^x86_64'; then
  "$cxx" -O2 -fcf-protection -o "$work/cet" "$work/plain.cc" -Wl,-z,cet-report=warning 2>"$work/cet.log" || {
    cat "$work/cet.log" >&2
    echo "hardening_test: FAIL: cannot build a program for CET" >&2
    exit 1
  }
  if readelf -nW "$work/cet" | marked_for_cet; then
    cet_marks=yes
  else
    echo "hardening_test: this toolchain marks no program for CET (IBT, SHSTK), so neither are" \
      "the programs checked here; the linker says:" >&2
    sed 's/^/  /' "$work/cet.log" >&2
  fi
fi

# 1. The check fails a program built without hardening: every flag the toolchain might default
# to is turned off explicitly (Debian's GCC makes PIE by default, Ubuntu's protects stacks).
"$cxx" -O2 -o "$work/plain" "$work/plain.cc" -fno-pie -no-pie -fno-stack-protector \
  -U_FORTIFY_SOURCE -fcf-protection=none -Wl,-z,norelro -Wl,-z,lazy -Wl,-z,execstack 2>"$work/cc.log" || {
  cat "$work/cc.log" >&2
  echo "hardening_test: FAIL: cannot build the self-check's program" >&2
  exit 1
}
if check "$work/plain" >"$work/plain.out"; then
  echo "hardening_test: FAIL: a program built without hardening passes the check" >&2
  exit 1
fi
wants=("not PIE" "no GNU_RELRO segment" "bound lazily" "executable stack" "no stack protector" "no fortify")
if readelf -hW "$work/plain" | grep -q 'X86-64'; then
  wants+=("no CET code")
  [ "$cet_marks" = no ] || wants+=("no CET:")
fi
for want in "${wants[@]}"; do
  grep -qF "$want" "$work/plain.out" || {
    cat "$work/plain.out" >&2
    echo "hardening_test: FAIL: the check does not see '$want' in an unhardened program" >&2
    exit 1
  }
done
echo "hardening_test: an unhardened program fails every check:" >&2
sed 's/^/  /' "$work/plain.out" >&2

# 2. The programs.
failed=0
for program in "$@"; do
  if check "$program" >"$work/out"; then
    echo "hardening_test: $(basename "$program"): PIE, full RELRO, non-executable stack, stack" \
      "protector, fortify, CET code$([ "$cet_marks" = no ] || echo ' and marking')" >&2
  else
    cat "$work/out" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] || {
  echo "hardening_test: FAIL: programs without the hardening above (is EOC_HARDENING off?)" >&2
  exit 1
}
