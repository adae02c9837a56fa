# gpuslate build. `make` builds build/gpuslate; `make check` builds the
# sanitizer variant, the fakes and the tests, and runs the whole suite;
# `make demo` runs status and reclaim on a simulated GPU host.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share
# Where `make install` puts the documents; --help names this directory.
DOCDIR ?= $(DATADIR)/doc/gpuslate
DESTDIR ?=
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CC ?= cc
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wvla -Wformat=2 -Wno-format-nonliteral -Wundef -Wpointer-arith
CSTD := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64
OPT ?= -O2 -g
CPPFLAGS_ALL := -Isrc -DGS_VERSION='"$(VERSION)"' -DGS_DOCDIR='"$(DOCDIR)"' $(CPPFLAGS)
CFLAGS_ALL := $(CSTD) $(WARN) $(OPT) -fstack-protector-strong -D_FORTIFY_SOURCE=2 $(CFLAGS)
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
# JSON (jansson) is linked statically so the binary needs only glibc at run time.
LIBS := -Wl,-Bstatic -ljansson -Wl,-Bdynamic -ldl -lpthread -lm

LIB_SRCS := $(sort $(filter-out src/cli/main.c,$(wildcard src/*/*.c)))
MAIN_SRC := src/cli/main.c
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))

B := build
REL_OBJS := $(LIB_SRCS:%.c=$(B)/rel/%.o)
SAN_OBJS := $(LIB_SRCS:%.c=$(B)/san/%.o)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/san/tests/%)

.PHONY: all asan fakes unit check test-unit test-e2e demo bench clean install uninstall

all: $(B)/gpuslate

$(B)/rel/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(B)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -O1 $(SAN) -U_FORTIFY_SOURCE -MMD -MP -c $< -o $@

# The option table names DOCDIR in --help: a build for another PREFIX
# (`make install PREFIX=/usr` after `make`) compiles it again. The stamp
# changes only when DOCDIR does.
$(B)/docdir.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(DOCDIR)' | cmp -s - $@ || echo '$(DOCDIR)' >$@
$(B)/rel/src/core/options.o $(B)/san/src/core/options.o: $(B)/docdir.stamp
.PHONY: FORCE
FORCE:

$(B)/libgpuslate.a: $(REL_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/libgpuslate-san.a: $(SAN_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/gpuslate: $(B)/rel/src/cli/main.o $(B)/libgpuslate.a
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDFLAGS) $(LIBS)

$(B)/gpuslate-san: $(B)/san/src/cli/main.o $(B)/libgpuslate-san.a
	$(CC) $(CFLAGS_ALL) $(SAN) -o $@ $^ $(LDFLAGS) $(LIBS)

asan: $(B)/gpuslate-san

# Test fakes: an NVML library that follows the real ABI (and its early-R535
# variant with 32-byte process entries, and a pre-R510 one without v2 memory
# info), a holder process and a FUSE server that never answers.
FAKE_CFLAGS := $(CSTD) $(WARN) -O1 -g -Isrc
$(B)/fakes/libnvidia-ml.so.1: tests/fakes/fake_nvml.c src/gpu/nvml_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -shared -fPIC -o $@ $< -lpthread

$(B)/fakes/r535/libnvidia-ml.so.1: tests/fakes/fake_nvml.c src/gpu/nvml_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -DFAKE_EARLY_R535 -shared -fPIC -o $@ $< -lpthread

# A library from before R510: v1 memory info only.
$(B)/fakes/r470/libnvidia-ml.so.1: tests/fakes/fake_nvml.c src/gpu/nvml_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -DFAKE_NO_MEMORY_V2 -shared -fPIC -o $@ $< -lpthread

$(B)/fakes/gs-holder: tests/fakes/holder.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -o $@ $< -lpthread

# A FUSE server that never answers: real uninterruptible sleeps (D state).
$(B)/fakes/gs-hangfs: tests/fakes/hangfs.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -o $@ $<

FAKES := $(B)/fakes/libnvidia-ml.so.1 $(B)/fakes/r535/libnvidia-ml.so.1 $(B)/fakes/r470/libnvidia-ml.so.1 \
	$(B)/fakes/gs-holder $(B)/fakes/gs-hangfs
fakes: $(FAKES)

# test_fake_nvml and test_nvml dlopen() the fake libraries, and test-unit
# runs before test-e2e builds the fakes: build them with those tests.
$(B)/san/tests/test_fake_nvml $(B)/san/tests/test_nvml: $(B)/fakes/libnvidia-ml.so.1 \
	$(B)/fakes/r535/libnvidia-ml.so.1 $(B)/fakes/r470/libnvidia-ml.so.1

$(B)/san/tests/%: tests/unit/%.c $(B)/libgpuslate-san.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -O1 $(SAN) -Wno-missing-prototypes -o $@ $< $(B)/libgpuslate-san.a -lcmocka $(LIBS)

unit: $(UNIT_BINS)

test-unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

test-e2e: $(B)/gpuslate $(B)/gpuslate-san $(FAKES)
	GPUSLATE_BIN=$(CURDIR)/$(B)/gpuslate-san GPUSLATE_BUILD=$(CURDIR)/$(B) bats --print-output-on-failure tests/e2e

# The whole suite: unit tests and end-to-end tests, both under ASan+UBSan,
# with one closing "N passed, N failed" line.
check: $(UNIT_BINS) $(B)/gpuslate $(B)/gpuslate-san $(FAKES)
	GPUSLATE_BUILD=$(CURDIR)/$(B) bash tests/run-all.sh

demo: $(B)/gpuslate $(FAKES)
	@GPUSLATE_BUILD=$(CURDIR)/$(B) bash tests/demo.sh

clean:
	rm -rf $(B)

# Installation: `make install PREFIX=/usr DESTDIR=/tmp/root` installs the
# binary, the man page, bash and zsh completion, the Slurm epilog wrapper
# (when tools/ has it) and the examples; `make uninstall` removes exactly
# those files (and the directories only gpuslate uses, when empty).
LIBEXECDIR ?= $(PREFIX)/libexec
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
INSTALL ?= install
SCDOC ?= scdoc
SLURM_EPILOG := tools/gpuslate-slurm-epilog
EXAMPLES := examples/hosts examples/systemd-gpuslate.conf
# The documents the man page and --help point to, installed beside the examples.
DOCS := docs/json.md docs/fleet.md docs/inventory.md docs/slurm.md docs/integrations.md docs/security.md

.PHONY: man completion deb

man: $(B)/gpuslate.1

# Written to a temporary file and renamed: a failing scdoc leaves neither an
# empty page nor the temporary file behind.
$(B)/gpuslate.1: man/gpuslate.1.scd VERSION
	@mkdir -p $(dir $@)
	@command -v $(SCDOC) >/dev/null 2>&1 || \
		{ echo "$@: '$(SCDOC)' not found: the man page needs scdoc (tools/install-deps installs it)" >&2; exit 1; }
	sed 's/@VERSION@/$(VERSION)/g' $< | $(SCDOC) >$@.tmp || { rm -f $@.tmp; echo "$@: $(SCDOC) failed" >&2; exit 1; }
	mv $@.tmp $@

# Syntax check of the completion scripts (zsh only where it is installed).
completion:
	bash -n completions/gpuslate.bash
	@if command -v zsh >/dev/null 2>&1; then echo "zsh -n completions/_gpuslate"; zsh -n completions/_gpuslate; fi

install: $(B)/gpuslate $(B)/gpuslate.1
	$(INSTALL) -D -m 0755 $(B)/gpuslate $(DESTDIR)$(BINDIR)/gpuslate
	$(INSTALL) -D -m 0644 $(B)/gpuslate.1 $(DESTDIR)$(MANDIR)/man1/gpuslate.1
	$(INSTALL) -D -m 0644 completions/gpuslate.bash $(DESTDIR)$(BASHCOMPDIR)/gpuslate
	$(INSTALL) -D -m 0644 completions/_gpuslate $(DESTDIR)$(ZSHCOMPDIR)/_gpuslate
	set -e; $(foreach f,$(EXAMPLES),$(INSTALL) -D -m 0644 $(f) $(DESTDIR)$(DOCDIR)/$(f);)
	set -e; $(foreach f,$(DOCS),$(INSTALL) -D -m 0644 $(f) $(DESTDIR)$(DOCDIR)/$(notdir $(f));)
	# The example unit names the binary where this installation puts it.
	sed 's|/usr/bin/gpuslate|$(BINDIR)/gpuslate|g' examples/systemd-gpuslate.conf \
		>$(DESTDIR)$(DOCDIR)/examples/systemd-gpuslate.conf
	@if [ -f $(SLURM_EPILOG) ]; then \
		echo "$(INSTALL) -D -m 0755 $(SLURM_EPILOG) $(DESTDIR)$(LIBEXECDIR)/gpuslate/gpuslate-slurm-epilog"; \
		$(INSTALL) -D -m 0755 $(SLURM_EPILOG) $(DESTDIR)$(LIBEXECDIR)/gpuslate/gpuslate-slurm-epilog; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpuslate $(DESTDIR)$(MANDIR)/man1/gpuslate.1 \
		$(DESTDIR)$(BASHCOMPDIR)/gpuslate $(DESTDIR)$(ZSHCOMPDIR)/_gpuslate \
		$(DESTDIR)$(LIBEXECDIR)/gpuslate/gpuslate-slurm-epilog \
		$(addprefix $(DESTDIR)$(DOCDIR)/,$(EXAMPLES) $(notdir $(DOCS)))
	@for d in $(DESTDIR)$(LIBEXECDIR)/gpuslate $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR); do \
		rmdir "$$d" 2>/dev/null || :; \
	done

# A Debian package built from a copy of the tree (dpkg-buildpackage cleans
# the tree it runs in): the .deb files end up in $(DEBDIR).
DEBDIR ?= $(B)/deb
DEB_SRC = $(abspath $(DEBDIR))/gpuslate-$(VERSION)

deb:
	rm -rf $(DEB_SRC)
	mkdir -p $(DEB_SRC)
	tar -cf - --exclude=./$(B) --exclude=./.git --exclude=./debian/gpuslate \
		--exclude=./debian/.debhelper --exclude=./debian/files --exclude='./debian/*.substvars' \
		--exclude=./debian/debhelper-build-stamp --exclude=./debian/tmp . | tar -xf - -C $(DEB_SRC)
	cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -us -uc -b
	@ls -1 $(abspath $(DEBDIR))/*.deb

-include $(REL_OBJS:.o=.d) $(SAN_OBJS:.o=.d) $(B)/rel/src/cli/main.d $(B)/san/src/cli/main.d

# ---- Hardening (issue 7): fuzzing, static analysis, Valgrind, allocation
# failures. See docs/security.md. These targets only add rules.

# Fuzzing: one libFuzzer target per parser, built with clang from the
# parsers' own sources (not the gcc-built library) under ASan+UBSan, each run
# for FUZZ_SECONDS on a copy of its seed corpus (tests/fuzz/corpus/NAME).
# Crashes land in build/fuzz/artifacts/. `make -j2 fuzz` runs two at once.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer -g -O1
FUZZ_CFLAGS := $(CSTD) $(WARN) -Wno-unused-command-line-argument -Isrc -DGS_VERSION='"$(VERSION)"'
FUZZ_TARGETS := pidstat pidstatus owner maps_line proc_devices nvidia_information hostlist \
	inventory gpusel merge drm_fdinfo kfd_properties freezer_cgroup stopped supervised expect
# The sources each parser needs, linked directly.
FUZZ_SRC_pidstat := src/proc/procinfo.c src/proc/owner.c src/util/util.c
FUZZ_SRC_pidstatus := $(FUZZ_SRC_pidstat)
FUZZ_SRC_owner := src/proc/owner.c src/util/util.c
FUZZ_SRC_maps_line := src/proc/holderscan.c src/proc/devset.c src/proc/drm_fdinfo.c src/util/pci.c src/util/util.c
FUZZ_SRC_proc_devices := src/proc/devset.c src/util/util.c
FUZZ_SRC_nvidia_information := src/gpu/procfs_nvidia.c src/util/util.c
FUZZ_SRC_hostlist := src/fleet/hostlist.c src/util/sanitize.c src/util/util.c
FUZZ_SRC_inventory := src/fleet/inventory.c src/fleet/hostlist.c src/util/sanitize.c src/util/strbuf.c src/util/strv.c \
	src/util/util.c
FUZZ_SRC_gpusel := src/core/gpusel.c src/util/pci.c src/util/util.c
FUZZ_SRC_merge := src/fleet/merge.c src/fleet/prom.c src/fleet/hostlist.c src/core/verdict.c src/core/expect.c src/util/sanitize.c src/util/strbuf.c \
	src/util/util.c
FUZZ_SRC_drm_fdinfo := src/proc/drm_fdinfo.c src/util/pci.c src/util/util.c
FUZZ_SRC_kfd_properties := src/gpu/kfd.c src/util/pci.c src/util/util.c
FUZZ_SRC_freezer_cgroup := src/proc/freezer.c src/util/util.c
FUZZ_SRC_stopped := src/core/stopped.c src/proc/owner.c src/util/util.c
FUZZ_SRC_supervised := src/proc/supervised.c src/proc/ptable.c src/proc/procinfo.c src/proc/owner.c src/util/util.c
FUZZ_SRC_expect := src/core/expect.c src/util/util.c
FUZZ_MAXLEN_inventory := 16384
FUZZ_MAXLEN_merge := 16384
FUZZ_DICT_merge := -dict=tests/fuzz/json.dict
FUZZ_MAXLEN_stopped := 16384
FUZZ_DICT_stopped := -dict=tests/fuzz/json.dict
FUZZ_BINS := $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz_%)

.PHONY: fuzz fuzz-build fuzz-regress analyze analyze-tidy analyze-cppcheck analyze-gcc valgrind failalloc

$(B)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_FLAGS) -MMD -MP -c $< -o $@

define FUZZ_LINK_RULE
$(B)/fuzz/fuzz_$(1): $(B)/fuzz/obj/tests/fuzz/fuzz_$(1).o $(FUZZ_SRC_$(1):%.c=$(B)/fuzz/obj/%.o)
	$$(FUZZ_CC) $$(FUZZ_FLAGS) -fsanitize=fuzzer -o $$@ $$^ -ljansson -lpthread -lm
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_LINK_RULE,$(t))))

fuzz-build: $(FUZZ_BINS)

# Every seed through every target once (fast; what a crash-turned-seed needs).
fuzz-regress: $(FUZZ_BINS)
	@set -e; for t in $(FUZZ_TARGETS); do \
		$(B)/fuzz/fuzz_$$t -runs=0 tests/fuzz/corpus/$$t 2>&1 | tail -n 1; done

fuzz: $(FUZZ_TARGETS:%=fuzz-run-%)

fuzz-run-%: $(B)/fuzz/fuzz_%
	@mkdir -p $(B)/fuzz/work/$* $(B)/fuzz/artifacts
	@echo "== fuzz $* for $(FUZZ_SECONDS) s"
	@$(B)/fuzz/fuzz_$* -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
		-max_len=$(or $(FUZZ_MAXLEN_$*),4096) $(FUZZ_DICT_$*) -print_final_stats=1 \
		-artifact_prefix=$(B)/fuzz/artifacts/$*- $(B)/fuzz/work/$* tests/fuzz/corpus/$* \
		>$(B)/fuzz/$*.log 2>&1 || { tail -n 60 $(B)/fuzz/$*.log; exit 1; }
	@grep -E '^stat::number_of_executed_units|^Done' $(B)/fuzz/$*.log | tr '\n' ' '; echo

-include $(wildcard $(B)/fuzz/obj/src/*/*.d $(B)/fuzz/obj/tests/fuzz/*.d)

# Static analysis: clang-tidy (.clang-tidy), cppcheck and GCC -fanalyzer over
# src/; fails on any finding not listed, with its reason, in tests/analysis/.
CPPCHECK ?= cppcheck
analyze-tidy:
	tests/analysis/run-clang-tidy.sh

analyze-cppcheck:
	$(CPPCHECK) --quiet --std=c11 --enable=warning,portability,performance --inline-suppr \
		--error-exitcode=1 --suppressions-list=tests/analysis/cppcheck-suppressions.txt \
		--library=posix -D_GNU_SOURCE -DGS_VERSION='"analyze"' -Isrc -j$(shell nproc) src/
	@echo "cppcheck: no findings"

analyze-gcc:
	tests/analysis/run-gcc-analyzer.sh

analyze: analyze-cppcheck analyze-gcc analyze-tidy

# Valgrind (memcheck) over end-to-end runs of the release build.
valgrind: $(B)/gpuslate $(FAKES)
	B=$(B) tests/analysis/valgrind.sh

# Allocation-failure injection (LD_PRELOAD) for the release build.
$(B)/fakes/failalloc.so: tests/fakes/failalloc.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -Wno-missing-prototypes -O1 -g -shared -fPIC -o $@ $<

failalloc: $(B)/gpuslate $(FAKES) $(B)/fakes/failalloc.so
	B=$(B) tests/analysis/failalloc.sh
