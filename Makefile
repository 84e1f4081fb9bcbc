# tpusim -- discrete-event TPU chip and pod simulator (C, SimGrid, libyaml, cmocka).
# `make run` and `make test` are the two commands a newcomer needs; both install
# the Debian packages they need first (`make deps`).

CC      ?= cc
PKGS    := simgrid yaml-0.1
CSTD    := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wold-style-definition -Wwrite-strings -Wundef -Wformat=2 -Wvla
CFLAGS  ?= -O2 -g
B       ?= build/release
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ALL_CFLAGS = $(CSTD) $(WARN) $(CFLAGS) -I. -I$(B)/gen $(PKG_CFLAGS) -MMD -MP
# The allocator: SimGrid allocates and frees about 8 small objects per simcall
# (a comm, its LMM variable, its action...), and glibc's malloc was a fifth of
# a full-pod run. Debian's mimalloc, linked first so that it serves SimGrid's
# allocations too, makes the same runs 1.2-1.5x faster (docs/reference.md,
# "Simulation cost"). The sanitizer and valgrind builds keep glibc's
# (ALLOC_LIBS=): they bring their own allocator.
ALLOC_LIBS ?= -lmimalloc
LDLIBS  = $(ALLOC_LIBS) $(PKG_LIBS) -lm
TEST_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null)
SGFLAG  ?=
BAD_EVERY ?= 1
SIMFLAGS = $(if $(SGFLAG),--sg=$(SGFLAG))
VALGRIND ?=
DEB_PKGS := libsimgrid-dev libyaml-dev libcmocka-dev libmimalloc-dev pkg-config
HAVE_PKGS = pkg-config --exists simgrid yaml-0.1 cmocka 2>/dev/null && \
            echo 'int main(void) { return 0; }' | $(CC) -x c - $(ALLOC_LIBS) -o /dev/null 2>/dev/null
# the tools the sweep-on-a-cluster tests drive: GNU parallel (make test, best effort)
# and a one-node Slurm (make cluster-test)
DEB_PARALLEL := parallel
DEB_CLUSTER  := slurm-wlm munge parallel

# the folders, bottom up (README.md, "Where things are"; tools/check_layers.sh)
DIRS    := base topology models kernels outputs workload config engine study serving cli
SRC     := $(foreach d,$(DIRS),$(wildcard $(d)/*.c))
LIBOBJ  := $(patsubst %.c,$(B)/%.o,$(filter-out cli/main.c,$(SRC))) $(B)/gen/embedded.o
EMBED   := $(sort $(wildcard configs/chips/*.yaml)) $(sort $(wildcard configs/models/presets/*.yaml)) \
           configs/scenarios/default.yaml
TESTS   := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/test_*.c))

all: $(B)/tpusim

deps:
	@if ! { $(HAVE_PKGS); }; then \
	    echo "installing Debian packages: $(DEB_PKGS)"; \
	    SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	    $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(DEB_PKGS) >/dev/null; \
	fi
	@$(HAVE_PKGS) || { echo "missing packages: $(DEB_PKGS)"; exit 1; }
	@command -v parallel >/dev/null 2>&1 || { \
	    SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	    echo "installing Debian packages: $(DEB_PARALLEL)"; \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(DEB_PARALLEL) >/dev/null 2>&1 || \
	    { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	      $(DEB_PARALLEL) >/dev/null 2>&1; } || echo "could not install $(DEB_PARALLEL): its test will skip"; }

$(B)/%.o: %.c $(B)/.flags
	@mkdir -p $(@D)
	@echo "CC $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/gen/embedded.c: $(EMBED) tools/embed.sh
	@mkdir -p $(@D)
	@sh tools/embed.sh $(EMBED) > $@.tmp && mv $@.tmp $@

$(B)/gen/embedded.o: $(B)/gen/embedded.c $(B)/.flags
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(ALL_CFLAGS) $(LDFLAGS) $(ALLOC_LIBS)' | cmp -s - $@ || \
	    echo '$(ALL_CFLAGS) $(LDFLAGS) $(ALLOC_LIBS)' > $@

$(B)/libtpusim.a: $(LIBOBJ)
	@rm -f $@
	@ar rcs $@ $^

$(B)/tpusim: $(B)/cli/main.o $(B)/libtpusim.a
	@echo "LD $@"
	@$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(B)/tests/%: tests/unit/%.c $(B)/libtpusim.a $(B)/.flags
	@mkdir -p $(@D)
	@$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< $(B)/libtpusim.a -o $@ $(TEST_LIBS) $(LDLIBS)

run: deps $(B)/tpusim
	$(B)/tpusim run $(SIMFLAGS)

# Each suite's output is shown only when it fails; one line sums them up.
# UNIT_QUEUE=DIR: a directory that several runs share (.ci/run's two lanes under
# valgrind): a run takes a suite only if it is the first to mkdir DIR/NAME, so
# every suite runs once in all; UNIT_FIRST's suites go first (the costliest
# under valgrind, measured; a new suite goes after them), so that both lanes end
# near the same time. Valgrind CPU with the smaller cases of test_under_checker():
# test_spmd 420 s, test_coll 251 s, test_autotune 87 s, every other suite < 70 s.
UNIT_QUEUE ?=
UNIT_FIRST := test_spmd test_coll test_autotune test_splash test_mesh test_flash test_sim test_graph \
              test_xla test_guards test_pcall
UNIT_ORDER = $(filter $(TESTS),$(addprefix $(B)/tests/,$(UNIT_FIRST))) \
             $(filter-out $(addprefix $(B)/tests/,$(UNIT_FIRST)),$(TESTS))
unit: $(TESTS)
	@fail=0; n=0; log=$$(mktemp); for t in $(UNIT_ORDER); do \
	    [ -z "$(UNIT_QUEUE)" ] || mkdir "$(UNIT_QUEUE)/$${t##*/}" 2>/dev/null || continue; \
	    n=$$((n + 1)); \
	    if ! TPUSIM_SIMFLAGS="$(SGFLAG)" $(VALGRIND) $$t >$$log 2>&1; then \
	        cat $$log; echo "FAIL: $$t"; fail=$$((fail + 1)); fi; \
	done; rm -f $$log; echo "unit: $$((n - fail)) suites passed, $$fail failed"; [ $$fail -eq 0 ]

bad-input: $(B)/tpusim
	@VALGRIND="$(VALGRIND)" BAD_EVERY=$(BAD_EVERY) sh tests/run_bad.sh $(B)/tpusim

$(B)/tests/jsoncheck: tests/jsoncheck.c $(B)/libtpusim.a $(B)/.flags
	@mkdir -p $(@D)
	@$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< $(B)/libtpusim.a -o $@ $(LDLIBS)

# Every numeric key at 0, -1, 1e-310, 1e308, 2^63, 2^32, NaN and infinity: check and a short
# run end in exit 0 and valid JSON or exit 2 and a message (tests/run_extreme.sh; about 2 min
# here in release, so it runs under `make asan`, not `make test`)
extreme: $(B)/tpusim $(B)/tests/jsoncheck
	@sh tests/run_extreme.sh $(B)/tpusim $(B)/tests/jsoncheck

# Random but valid scenarios and what must hold of each (tests/run_props.py: valid JSON, no
# NaN, MFU at most 100 %, no op above its roofline, fast within 1 % of exact); 24 fixed
# cases here, PROPS_N=1000 (and PROPS_SEED) for a long run
props: $(B)/tpusim $(B)/tests/jsoncheck
	@if command -v python3 >/dev/null; then python3 tests/run_props.py $(B)/tpusim $(B)/tests/jsoncheck; \
	else echo "props: skipped: python3 is needed"; fi

e2e: $(B)/tpusim $(B)/tests/jsoncheck
	@VALGRIND="$(VALGRIND)" SIMFLAGS="$(SIMFLAGS)" sh tests/run_e2e.sh $(B)/tpusim
	@VALGRIND="$(VALGRIND)" SIMFLAGS="$(SIMFLAGS)" sh tests/run_trace.sh $(B)/tpusim
	@sh tests/run_hlo.sh $(B)/tpusim
	@sh tests/run_hlo_groups.sh $(B)/tpusim

# JAX programs end to end (not part of `make test`): a venv with jax (CPU),
# tools/hlo_dump.py's examples dumped afresh, simulated and checked (tests/run_hlo.sh);
# program.device_order's create_device_mesh against jax's (tools/jax_device_order.py)
HLO_VENV ?= /tmp/tpusim-jaxvenv
hlo-test: $(B)/tpusim $(B)/tests/test_device_order
	@[ -x $(HLO_VENV)/bin/python ] && $(HLO_VENV)/bin/python -c 'import jax' 2>/dev/null || \
	    { python3 -m venv $(HLO_VENV) 2>/dev/null || { echo "hlo-test: python3 -m venv failed (make ci-deps installs python3-venv)"; exit 2; }; \
	      $(HLO_VENV)/bin/pip install -q --disable-pip-version-check --progress-bar off jax; }
	@d=$$(mktemp -d) && $(HLO_VENV)/bin/python tools/hlo_dump.py all $$d && \
	    sh tests/run_hlo.sh $(B)/tpusim $$d; rc=$$?; rm -rf $$d; exit $$rc
	@d=$$(mktemp -d) && $(HLO_VENV)/bin/python tools/jax_device_order.py $$d/cases && \
	    TPUSIM_DEVICE_ORDER_CASES=$$d/cases $(B)/tests/test_device_order >$$d/log 2>&1; \
	    rc=$$?; grep -e 'device order:' -e 'differs from jax' $$d/log; rm -rf $$d; exit $$rc

# the model: path against XLA's own partitioning of the same Llama-3-8B step
# (tools/hlo_agree.py; the table in docs/reference.md, "Agreement with model:");
# about 30 s (the jax dump 17 s, the two runs 11 s)
hlo-agree: $(B)/tpusim
	@[ -x $(HLO_VENV)/bin/python ] && $(HLO_VENV)/bin/python -c 'import jax' 2>/dev/null || \
	    { echo "hlo-agree: no jax in $(HLO_VENV) (make hlo-test makes it)"; exit 2; }
	@d=$$(mktemp -d) && $(HLO_VENV)/bin/python tools/hlo_agree.py $(B)/tpusim $$d; rc=$$?; rm -rf $$d; exit $$rc

# GNU parallel over the shards of a sweep, merged, against one run (docs/reference.md: "Sweeps on a cluster")
parallel-test: $(B)/tpusim
	@sh tests/run_parallel.sh $(B)/tpusim

test: deps
	@$(MAKE) --no-print-directory all unit bad-input e2e props parallel-test checks docs-test

# The user guide's runnable blocks, run as written (tests/run_docs.sh)
docs-test: $(B)/tpusim
	@sh tests/run_docs.sh $(B)/tpusim

# A sweep through a real one-node Slurm (munged, slurmctld, slurmd started here and stopped
# after): tools/slurm_sweep.sh's job array and merge against one run, byte for byte.
cluster-test: deps $(B)/tpusim
	@missing=; for c in sbatch slurmctld slurmd munged parallel; do \
	    command -v $$c >/dev/null 2>&1 || [ -x /usr/sbin/$$c ] || missing=1; done; \
	if [ -n "$$missing" ]; then \
	    SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	    echo "installing Debian packages: $(DEB_CLUSTER)"; \
	    $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(DEB_CLUSTER) >/dev/null || \
	    echo "could not install $(DEB_CLUSTER)"; \
	fi
	@sh tests/run_slurm.sh $(B)/tpusim

# report.html of a run and of a sweep in headless Chromium (Debian chromium and chromium-driver,
# installed when missing; skipped with a message when they cannot be): no console error, the
# tables and plots in the DOM, a non-blank screenshot of the expected size.
browser-test: deps $(B)/tpusim
	@if ! command -v chromium >/dev/null 2>&1; then \
	    SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	    echo "installing Debian packages: chromium chromium-driver"; \
	    ($$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	        $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null) 2>/dev/null || \
	    echo "could not install chromium"; \
	fi
	@sh tests/run_browser.sh $(B)/tpusim

# Every Debian package any CI stage needs, installed once up front: apt cannot run
# twice at once, and .ci/run runs its stages in two lanes (README.md, "Testing").
DEB_CI := $(DEB_PKGS) $(DEB_CLUSTER) chromium chromium-driver clang libclang-rt-14-dev valgrind python3-venv
ci-deps: deps
	@missing=; for p in $(DEB_CI); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	    SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	    echo "installing Debian packages:$$missing"; \
	    $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# The layer rules and the no-writable-globals rule, and a test that both can fail.
checks: $(B)/tpusim
	@sh tools/check_layers.sh
	@sh tools/check_globals.sh $(B)
	@ALLOC_LIBS="$(ALLOC_LIBS)" sh tests/run_tools.sh $(B)

asan: deps
	@$(MAKE) --no-print-directory B=build/asan \
	    CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    LDFLAGS="-fsanitize=address,undefined" ALLOC_LIBS= SGFLAG=--cfg=contexts/factory:thread \
	    all unit bad-input e2e extreme

# Under valgrind: every unit suite (valgrind-unit); every 4th bad-input case
# (VALGRIND_BAD_EVERY=1: all of them) and the e2e and trace checks, whose runs that start
# SimGrid go through valgrind (valgrind-e2e). make asan runs the whole corpus. VG_B: the
# build directory. With UNIT_QUEUE set, valgrind-unit runs only the suites it takes from the
# queue (the unit target; .ci/run's two lanes share them). .ci/run names the queue
# VALGRIND_UNIT_QUEUE, which only this target reads: a plain UNIT_QUEUE in the
# environment would make every other stage's unit run take from it too.
# SimGrid's ucontext factory under valgrind, not threads: an actor switch is a thread
# switch under valgrind's lock with threads (test_spmd's fold-with-directions case: 130 s
# of CPU with threads, 34 s with ucontext). memcheck still sees what runs on the actors'
# stacks: a read past a malloc'ed block and a branch on an uninitialised local, put into
# eng_core_main by hand, were both reported under ucontext (and failed the suite).
# make asan keeps threads (ASan does not fully support swapcontext's stack switches).
VALGRIND_UNIT_QUEUE ?=
VALGRIND_BAD_EVERY ?= 4
VG_B ?= build/debug
VG_MAKE = $(MAKE) --no-print-directory B=$(VG_B) CFLAGS="-O0 -g" ALLOC_LIBS= \
    VALGRIND="valgrind -q --max-threads=4000 --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite" \
    SGFLAG=--cfg=contexts/factory:ucontext
valgrind: valgrind-unit valgrind-e2e
valgrind-unit: deps
	@command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
	@$(VG_MAKE) UNIT_QUEUE=$(VALGRIND_UNIT_QUEUE) unit
valgrind-e2e: deps
	@command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
	@$(VG_MAKE) BAD_EVERY=$(VALGRIND_BAD_EVERY) all bad-input e2e

bench: deps $(B)/tpusim $(B)/sg_baseline
	@sh tools/bench.sh $(B)/tpusim $(B)/sg_baseline

$(B)/sg_baseline: tools/sg_baseline.c
	@mkdir -p $(@D)
	@$(CC) $(CSTD) $(CFLAGS) $(PKG_CFLAGS) $(LDFLAGS) $< -o $@ $(LDLIBS)

# issue 30.6: one driver actor against per-chip actors, SimGrid alone (on demand only)
$(B)/sg_ring_driver: tools/sg_ring_driver.cpp
	@mkdir -p $(@D)
	@$(CXX) -std=c++17 -O2 -Wall -Wextra -Werror $(PKG_CFLAGS) $(LDFLAGS) $< -o $@ $(LDLIBS)

FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: deps
	@command -v clang >/dev/null || { apt-get update -qq && apt-get install -y -qq clang libclang-rt-14-dev; }
	@sh tools/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fidelity: deps $(B)/tpusim
	@rc=0; sh tools/fidelity.sh $(B)/tpusim || rc=1; echo; \
	    python3 tools/fidelity_xla.py $(B)/tpusim || rc=1; echo; \
	    python3 tools/fidelity_models.py $(B)/tpusim $(if $(MODEL_ROWS),--only $(MODEL_ROWS)) \
	        --timeout $(or $(MODEL_TIMEOUT),900) || rc=1; echo; \
	    python3 tools/fidelity_mlperf.py $(B)/tpusim $(if $(MLPERF_ROWS),--only $(MLPERF_ROWS)) \
	        --timeout $(or $(MODEL_TIMEOUT),900) || rc=1; echo; \
	    python3 tools/fidelity_serving.py $(B)/tpusim $(if $(SERVING_ROWS),--only $(SERVING_ROWS)) \
	        --timeout $(or $(MODEL_TIMEOUT),900) || rc=1; exit $$rc

# fidelity fast against exact on every shipped scenario, model step, sweep point and
# collective example (tools/fast_exact.py; minutes: the exact runs)
fast-exact: deps $(B)/tpusim
	@python3 tools/fast_exact.py $(B)/tpusim

check-layers:
	@sh tools/check_layers.sh

format:
	@clang-format -i $(SRC) $(foreach d,$(DIRS),$(wildcard $(d)/*.h)) $(wildcard tests/unit/*.c tests/unit/*.h)

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
.PHONY: hlo-test hlo-agree valgrind-unit valgrind-e2e all deps ci-deps run unit bad-input e2e props extreme parallel-test cluster-test browser-test docs-test checks test asan valgrind bench fuzz fidelity fast-exact check-layers format clean FORCE
