#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where the machine's CPU goes per template run, at each concurrency: `execbox serve --pool 8
# --preload numpy,pandas`, RUNS print(1) requests at concurrency C under `perf record -a -g`,
# then the inclusive share of chosen kernel entry points (the per-run namespaces, cgroups,
# mounts, fork, exit, exec, page faults) and the self time of each program (the guest's python,
# the server), and each process's share (user and kernel), each times the machine's busy time per run from /proc/stat. Shares of
# kernel entry points nest (clone's includes the namespaces it makes), so the rows do not add
# up; "kernel" and "user" do (with idle left out). Beside it, a bare fork of the same preloaded
# interpreter (bench/forklimit.py) in the same run. Then, per level, an additive split of the
# same recording (bench/cpu_split.py: each sample in one row by kernel entry point and one column
# by process) beside the same split of a bare fork recorded alike. perf's own overhead inflates
# every total here, execbox's more than the bare fork's: bench/forkratio.sh has the totals
# without it. Needs perf (linux-perf) and root.
# Usage: bench/tpl_cpu.sh   Environment: RUNS (default 400), CONCS (default "1 2 8"), BUILD.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-release}
[[ -x $build/execbox ]] || build=build
bin=$build/execbox
n=${RUNS:-400}
concs=${CONCS:-1 2 8}
. bench/lib.sh
bench_setup tplcpu
hz=$(getconf CLK_TCK)
obody='{"code": "print(1)"}'
oexp='"stdout":"1\n"'

# name|symbols (inclusive, kernel): the first matching symbol's share is the row's.
rows=(
    "clone of a run (all of it)|copy_process"
    "  its namespaces|copy_namespaces create_new_namespaces"
    "  network namespace made|copy_net_ns"
    "  mount namespace copied|copy_mnt_ns"
    "  user namespace made|create_user_ns"
    "  fork's memory (page tables)|dup_mmap"
    "network namespace torn down|cleanup_net"
    "cgroup mkdir|cgroup_mkdir"
    "cgroup rmdir|cgroup_rmdir"
    "cgroup release work|css_free_rwork_fn css_killed_work_fn css_release_work_fn"
    "mounts (mount, fsmount, move_mount)|path_mount __x64_sys_fsmount __x64_sys_move_mount"
    "exec (the init, the bootstrap)|bprm_execve"
    "process exit|do_exit"
    "  address space teardown|exit_mmap"
    "page faults|asm_exc_page_fault"
    "namespaces freed (put_*)|free_nsproxy"
)

# name|regex of the process names (comm) it sums.
comms=(
    "the template and the guest (python3)|^python3$"
    "the guest after its run: its exit|^execbox-done"
    "serve's threads|^execbox-(serve|front|worker|fill|grave|netns|proxy|dns|watch|expiry)$|^MHD"
    "the run's init (namespaces, mounts)|^memfd:execbox"
    "kernel workers (netns, cgroup release)|^kworker|^ksoftirqd|^rcu"
)

echo "# CPU per template run of print(1), serve --pool 8 --preload numpy,pandas, $n requests per level,"
echo "# $(nproc) cores, $(date -u +%FT%TZ), $($bin --version 2>/dev/null || true); ms of machine CPU per run"
declare -A ms
for c in $concs; do
    bench_serve "$log" "$bin" --queue 512 --workers 8 --pool 8 --preload numpy,pandas
    bench_warmup "$client" 16 "$obody" "$oexp"
    data=$work/perf.$c
    b0=$(bench_busy)
    perf record -a -g -q -o "$data" -- "$client" "$port" "$n" "$c" "$obody" "$oexp" >"$work/r.$c" ||
        { echo "the client failed at c=$c: $(cat "$work/r.$c")" >&2; exit 1; }
    b1=$(bench_busy)
    bench_stop
    per=$(awk -v a="$b0" -v b="$b1" -v n="$n" -v hz="$hz" 'BEGIN{printf "%.3f", (b-a)*1000/hz/n}')
    # The additive split (bench/cpu_split.py), and the same for a bare fork recorded alike.
    perf script -i "$data" -F comm,pid,ip,sym 2>/dev/null |
        python3 bench/cpu_split.py --kind execbox --per "$per" >"$work/split.$c"
    b0=$(bench_busy)
    perf record -a -g -q -o "$work/bare.$c" -- /usr/bin/python3 bench/forklimit.py numpy,pandas \
        "$c" "$n" 'print(1)' >"$work/bare_r.$c"
    b1=$(bench_busy)
    bper=$(awk -v a="$b0" -v b="$b1" -v n="$n" -v hz="$hz" 'BEGIN{printf "%.3f", (b-a)*1000/hz/n}')
    perf script -i "$work/bare.$c" -F comm,pid,ip,sym 2>/dev/null |
        python3 bench/cpu_split.py --kind bare --per "$bper" >"$work/bsplit.$c"
    ms[total,$c]=$per
    ms[rate,$c]=$(sed -n 's/.*req\/s=\([0-9.]*\).*/\1/p' "$work/r.$c")
    perf report -i "$data" --children --sort sym --stdio -g none --percent-limit 0.05 2>/dev/null |
        awk '/%/{gsub("%","",$1); print $1, $NF}' >"$work/sym.$c"
    perf report -i "$data" --no-children --sort dso --stdio -g none 2>/dev/null |
        awk '/%/{gsub("%","",$1); $1=$1; print}' >"$work/dso.$c"
    idle=$(awk '$2=="do_idle"{print $1; exit}' "$work/sym.$c")
    idle=${idle:-0}
    share() { awk -v s="$1" -v idle="$idle" -v per="$per" \
        'BEGIN{split(s, w, " "); for (i in w) want[w[i]]=1} $2 in want && !done {printf "%.2f", $1/(100-idle)*per; done=1} END{if(!done) printf "0"}' \
        "$work/sym.$c"; }
    for row in "${rows[@]}"; do
        ms["${row%%|*}",$c]=$(share "${row#*|}")
    done
    kern=$(awk -v idle="$idle" -v per="$per" '$2=="[kernel.kallsyms]"{k=$1} END{printf "%.2f", (k-idle)/(100-idle)*per}' "$work/dso.$c")
    ms[kernel,$c]=$kern
    for d in python3.11 libexecbox.so.0.1.0 libc.so.6; do
        ms[$d,$c]=$(awk -v d="$d" -v idle="$idle" -v per="$per" '$NF==d{printf "%.2f", $1/(100-idle)*per; f=1} END{if(!f) printf "0"}' "$work/dso.$c")
    done
    # By process (user and kernel time together), by the name each has when sampled.
    perf report -i "$data" --no-children --sort comm --stdio -g none 2>/dev/null |
        awk '/%/{gsub("%","",$1); print $1, $2}' >"$work/comm.$c"
    for g in "${comms[@]}"; do
        ms["${g%%|*}",$c]=$(awk -v re="${g#*|}" -v idle="$idle" -v per="$per" \
            '$2 ~ re {t += $1} END{printf "%.2f", t/(100-idle)*per}' "$work/comm.$c")
    done
done
printf '%-40s' "concurrency"
for c in $concs; do printf ' %8s' "c=$c"; done
echo
line() {
    printf '%-40s' "$1"
    for c in $concs; do printf ' %8s' "${ms[$2,$c]}"; done
    echo
}
line "runs/s" rate
line "machine CPU per run (ms)" total
line "kernel, all of it (idle left out)" kernel
for row in "${rows[@]}"; do line "${row%%|*}" "${row%%|*}"; done
line "user: python3.11 (self, template and guest)" python3.11
line "user: libexecbox (self, serve)" libexecbox.so.0.1.0
line "user: libc (self, every process)" libc.so.6
echo "by process, user and kernel:"
for g in "${comms[@]}"; do line "  ${g%%|*}" "${g%%|*}"; done
for c in $concs; do
    printf '%-40s %s\n' "bare fork c=$c" \
        "$(/usr/bin/python3 bench/forklimit.py numpy,pandas "$c" "$n" 'print(1)')"
done
for c in $concs; do
    echo
    echo "# c=$c, every sample in one row and one column (bench/cpu_split.py), execbox under perf:"
    cat "$work/split.$c"
    echo "# c=$c, the bare fork under perf ($(cat "$work/bare_r.$c")):"
    cat "$work/bsplit.$c"
done
