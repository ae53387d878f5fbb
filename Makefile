# Makefile - builds liblogcounter (static and shared), the logcounter CLI,
# the logcounterd daemon, logcounter.pc, and runs the demo (make run) and
# the suite (make test).
# The version comes from include/logcounter.h; nothing is duplicated here.

VERSION_MAJOR := $(shell sed -n 's/^\#define LC_VERSION_MAJOR \([0-9]*\).*/\1/p' include/logcounter.h)
VERSION_MINOR := $(shell sed -n 's/^\#define LC_VERSION_MINOR \([0-9]*\).*/\1/p' include/logcounter.h)
VERSION_PATCH := $(shell sed -n 's/^\#define LC_VERSION_PATCH \([0-9]*\).*/\1/p' include/logcounter.h)
SOVERSION     := $(shell sed -n 's/^\#define LC_SOVERSION \([0-9]*\).*/\1/p' include/logcounter.h)
VERSION       := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)

PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
DESTDIR ?=

CC      ?= cc
CFLAGS  ?= -O2 -g
# SANITIZE=address,undefined or SANITIZE=thread builds everything with it.
ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
BUILD   ?= build-$(subst $(comma),-,$(SANITIZE))
endif
comma   := ,
BUILD   ?= build

LC_BASE   = -std=c11 -Wall -Wextra -Wshadow -Wmissing-prototypes \
            -Wstrict-prototypes -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L \
            -pthread
# The library, tests, bench, chaos and fuzz targets see src/ (the tests,
# bench, chaos and fuzz programs use its format.h); the CLI and the daemon
# only the public header.
LC_CFLAGS   = $(LC_BASE) -Iinclude -Isrc
TOOL_CFLAGS = $(LC_BASE) -Iinclude
LIBS      = -lmemcachedutil -lmemcached -lleveldb -lssl -lcrypto -pthread

# src/FOLDER/*.c: one folder per layer (src/internal.h is the map).
LIB_SRC   = $(wildcard src/*/*.c)
LIB_OBJ   = $(LIB_SRC:src/%.c=$(BUILD)/obj/%.o)
LIB_A     = $(BUILD)/liblogcounter.a
LIB_SO    = $(BUILD)/liblogcounter.so
CLI       = $(BUILD)/logcounter
PC        = $(BUILD)/logcounter.pc

TEST_SRC  = $(wildcard tests/test_*.c)
TEST_BIN  = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# common/: the helpers tests/, bench/ and chaos/ share (common.h).
COMMON_SRC = common/common.c
TEST_LIB  = $(filter-out tests/test_%.c,$(wildcard tests/*.c)) $(COMMON_SRC)

.PHONY: all deps run test unit-test cli-test install uninstall clean
all: $(LIB_A) $(LIB_SO) $(CLI) $(PC)

# -MMD: each object also depends on the headers it includes (.d files).
$(BUILD)/obj/%.o: src/%.c include/logcounter.h
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) -MMD -MP -fPIC -fvisibility=hidden -c -o $@ $<
-include $(LIB_OBJ:.o=.d)

$(LIB_A): $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

# The library with its test seams (-DLC_TEST_SEAMS, see src/internal.h),
# linked only by the chaos harness.
LIB_SEAM_OBJ = $(LIB_SRC:src/%.c=$(BUILD)/obj-seams/%.o)
LIB_SEAM_A   = $(BUILD)/liblogcounter-seams.a
$(BUILD)/obj-seams/%.o: src/%.c include/logcounter.h
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) -DLC_TEST_SEAMS -MMD -MP -c -o $@ $<
-include $(LIB_SEAM_OBJ:.o=.d)
$(LIB_SEAM_A): $(LIB_SEAM_OBJ)
	rm -f $@
	ar rcs $@ $^

$(LIB_SO): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,liblogcounter.so.$(SOVERSION) $(LDFLAGS) -o $@.$(VERSION) $^ $(LIBS)
	ln -sf liblogcounter.so.$(VERSION) $@.$(SOVERSION)
	ln -sf liblogcounter.so.$(VERSION) $@

# The CLI: tools/logcounter.c and tools/cli_*.c (the daemon's files are
# tools/logcounterd/).
CLI_SRC   = tools/logcounter.c $(wildcard tools/cli_*.c)
# main (cli_main.c) finds a cluster's primary in etcd (--etcd) with the
# daemon's etcd client.
$(CLI): $(CLI_SRC) tools/cli.h tools/logcounterd/lcd_etcd.c tools/logcounterd/lcd_etcd.h $(LIB_A)
	$(CC) $(TOOL_CFLAGS) $(CFLAGS) $(LDFLAGS) -Itools/logcounterd -o $@ $(CLI_SRC) tools/logcounterd/lcd_etcd.c $(LIB_A) $(LIBS) -lcurl -ljson-c

# The directories the .pc names, kept in a file that changes only when they
# do: "make install PREFIX=X" after a plain "make" rewrites the .pc.
PC_DIRS = $(BUILD)/pc-dirs
$(PC_DIRS): FORCE
	@mkdir -p $(@D)
	@echo '$(PREFIX) $(LIBDIR) $(INCDIR)' | cmp -s - $@ 2>/dev/null || \
	  echo '$(PREFIX) $(LIBDIR) $(INCDIR)' > $@
FORCE:
.PHONY: FORCE

$(PC): logcounter.pc.in include/logcounter.h $(PC_DIRS)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCDIR@|$(INCDIR)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# The library a test links: the plain one, but for test_walkgrow and
# test_prefetch, which use a seam (the library built with LC_TEST_SEAMS,
# as chaos does).
TEST_LC = $(LIB_A)
SEAM_TESTS = $(BUILD)/tests/test_walkgrow $(BUILD)/tests/test_prefetch
$(SEAM_TESTS): TEST_LC = $(LIB_SEAM_A)
$(SEAM_TESTS): TEST_SRC_EXTRA = -DLC_TEST_SEAMS
$(SEAM_TESTS): $(LIB_SEAM_A)

# test_faults fails LevelDB writes on demand through -Wl,--wrap;
# test_proto tests the daemon's request parser.
$(BUILD)/tests/test_faults: TEST_LDFLAGS = -Wl,--wrap=leveldb_write
# test_log_write counts, holds and fails the log's group writes the same way.
$(BUILD)/tests/test_log_write: TEST_LDFLAGS = -Wl,--wrap=leveldb_write
# test_backup fails the copy's first write the same way (a backup that
# dies before anything of it is on disk).
$(BUILD)/tests/test_backup: TEST_LDFLAGS = -Wl,--wrap=leveldb_write
# test_first fails a whole pipelined round through -Wl,--wrap.
$(BUILD)/tests/test_first: TEST_LDFLAGS = -Wl,--wrap=lc__cache_pipe
# test_powercut links the chaos harness's power-cut model (the shim's
# interposers and the cut) into itself, and the library's seams (a batch
# held before its log write).
$(BUILD)/tests/test_powercut: TEST_SRC_EXTRA = -DLC_TEST_SEAMS -Ichaos chaos/powercut.c chaos/cut.c -ldl
$(BUILD)/tests/test_powercut: TEST_LC = $(LIB_SEAM_A)
$(BUILD)/tests/test_powercut: chaos/powercut.c chaos/cut.c chaos/chaos.h $(LIB_SEAM_A)
# test_chaos_fit links the chaos checker's ledger fit and per-gap cause
# check (ledger_report.c, ledger.c), and its tally kill window (tallywin.c).
$(BUILD)/tests/test_chaos_fit: TEST_SRC_EXTRA = -Ichaos chaos/ledger_report.c chaos/ledger.c chaos/tallywin.c
$(BUILD)/tests/test_chaos_fit: chaos/ledger_report.c chaos/ledger.c chaos/tallywin.c chaos/chaos.h
$(BUILD)/tests/test_proto: TEST_SRC_EXTRA = -Itools/logcounterd tools/logcounterd/lcd_proto.c tools/logcounterd/lcd_meta.c
$(BUILD)/tests/test_proto: tools/logcounterd/lcd_proto.c tools/logcounterd/lcd_meta.c tools/logcounterd/lcd_proto.h tools/logcounterd/lcd_job.h
# test_binary tests the daemon's binary-protocol parser.
BINARY_SRC = tools/logcounterd/lcd_binary.c tools/logcounterd/lcd_proto.c tools/logcounterd/lcd_meta.c
$(BUILD)/tests/test_binary: TEST_SRC_EXTRA = -Itools/logcounterd $(BINARY_SRC)
$(BUILD)/tests/test_binary: $(BINARY_SRC) tools/logcounterd/lcd_binary.h tools/logcounterd/lcd_proto.h
# test_auth tests the daemon's --auth-file and --rights-file tables.
AUTH_SRC = tools/logcounterd/lcd_auth.c tools/logcounterd/lcd_auth_parse.c tools/logcounterd/lcd_rights.c
$(BUILD)/tests/test_auth: TEST_SRC_EXTRA = -Itools/logcounterd $(AUTH_SRC) tools/logcounterd/lcd_proto.c tools/logcounterd/lcd_meta.c -lcrypto -levent
$(BUILD)/tests/test_auth: $(AUTH_SRC) tools/logcounterd/lcd_auth.h
$(BUILD)/tests/%: tests/%.c $(TEST_LIB) $(wildcard tests/*.h common/*.h) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) $(TEST_LDFLAGS) -Itests -Icommon -o $@ $< $(TEST_SRC_EXTRA) $(TEST_LIB) $(TEST_LC) $(LIBS) -lcmocka

# The C example in README.md must compile.
$(BUILD)/readme_example: README.md $(LIB_A)
	@mkdir -p $(@D)
	sed -n '/^```c$$/,/^```$$/{/^```/d;p}' README.md > $@.c
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $@.c $(LIB_A) $(LIBS)

# Installs missing Debian packages (as root) or names them.
deps:
	@tests/deps.sh

# Builds, starts a private memcached unless LOGCOUNTER_MEMCACHED is set, and
# shows the main job.
run: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) tools/demo.sh

# The whole suite: each test program starts and stops its own memcached.
test: deps
	@$(MAKE) --no-print-directory all $(TEST_BIN) $(BUILD)/readme_example $(BENCH_BIN) $(DAEMON_CLIENT) $(TEST_EXTRA)
	@BUILD=$(BUILD) tests/run.sh $(TEST_BIN)

install: all
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR) $(DESTDIR)$(BINDIR)
	install -m 644 include/logcounter.h $(DESTDIR)$(INCDIR)/
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO).$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf liblogcounter.so.$(VERSION) $(DESTDIR)$(LIBDIR)/liblogcounter.so.$(SOVERSION)
	ln -sf liblogcounter.so.$(VERSION) $(DESTDIR)$(LIBDIR)/liblogcounter.so
	install -m 644 $(PC) $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 755 $(CLI) $(DAEMON) $(DESTDIR)$(BINDIR)/

uninstall:
	rm -f $(DESTDIR)$(INCDIR)/logcounter.h $(DESTDIR)$(LIBDIR)/liblogcounter.* \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/logcounter.pc $(DESTDIR)$(BINDIR)/logcounter \
	      $(DESTDIR)$(BINDIR)/logcounterd

clean:
	rm -rf build build-*

# ---- benchmark harness (bench/) ----------------------------
# make bench        measures every allocation path against raw memcached incr
#                   and against the peers (Redis INCR, PostgreSQL nextval:
#                   mk/peers.mk) and writes bench/results/ (table, CSV,
#                   charts); settings from the environment or the command
#                   line, e.g. make bench BENCH_SECONDS=1 (build/bench --help)
#                   If the peers cannot be installed or built, it runs
#                   without them and their rows say why.
# make bench-smoke  a few seconds: every case runs and gives sane numbers
#                   (build/bench: no peers, so no hiredis or libpq needed)
BENCH_SRC = $(wildcard bench/*.c) $(COMMON_SRC)
BENCH_BIN = $(BUILD)/bench
BENCH_VARS = BENCH_SECONDS BENCH_RUNS BENCH_THREADS BENCH_RECORDS_MAX \
             BENCH_RESTORE_REPEATS BENCH_CASES BENCH_OUT BENCH_WIDE_THREADS
export $(BENCH_VARS)
.PHONY: bench bench-smoke

$(BENCH_BIN): $(BENCH_SRC) $(wildcard bench/*.h common/*.h) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) -Ibench -Icommon -o $@ $(BENCH_SRC) $(LIB_A) $(LIBS) -lm

bench:
	@tests/deps.sh gnuplot-nox
	@$(MAKE) --no-print-directory $(BENCH_BIN) $(DAEMON)
	@if $(MAKE) --no-print-directory bench-peers; then \
	  BUILD=$(BUILD) bench/run.sh --peers; \
	else \
	  BUILD=$(BUILD) BENCH_PEERS_WHY="the peers could not be installed or built (make bench-peers says why)" \
	    bench/run.sh; \
	fi

bench-smoke: deps
	@$(MAKE) --no-print-directory $(BENCH_BIN) $(DAEMON)
	@BUILD=$(BUILD) bench/run.sh --smoke

# make bench-memory  $(BUILD)/bench-memory (bench/mem/memory.c): RSS, log
#                    size, reload and restart time with many names
.PHONY: bench-memory
bench-memory: $(BUILD)/bench-memory
$(BUILD)/bench-memory: bench/mem/memory.c $(COMMON_SRC) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) -Icommon -o $@ $< $(COMMON_SRC) $(LIB_A) $(LIBS)

# ---- daemon (tools/logcounterd/) --------------------------
# build/logcounterd, the service speaking the memcached text protocol; its
# request parser is tools/logcounterd/lcd_proto.c (unit-tested by
# tests/test_proto.c, fuzzed by fuzz/fuzz_proto.c).  tests/daemon/lcd_client
# is the test and throughput client used by tests/daemon_test.sh.
# make daemon-test  builds both and runs tests/daemon_test.sh
DAEMON_SRC = $(wildcard tools/logcounterd/*.c)
DAEMON     = $(BUILD)/logcounterd
DAEMON_CLIENT = $(BUILD)/tests/lcd_client
.PHONY: daemon-test
all: $(DAEMON)

# sd_notify (tools/logcounterd/lcd_notify.c): Debian's libsystemd-dev.
# etcd's JSON gateway (lcd_etcd.c, --etcd): libcurl4-openssl-dev, libjson-c-dev.
SYSTEMD_LIBS := $(shell pkg-config --libs libsystemd 2>/dev/null || echo -lsystemd)
$(DAEMON): $(DAEMON_SRC) $(wildcard tools/logcounterd/*.h) $(LIB_A)
	$(CC) $(TOOL_CFLAGS) $(CFLAGS) $(LDFLAGS) -Itools/logcounterd -o $@ $(DAEMON_SRC) $(LIB_A) $(LIBS) -levent -levent_pthreads -levent_openssl $(SYSTEMD_LIBS) -lcurl -ljson-c

# The systemd unit (dist/logcounterd.service.in, Type=notify) with
# @BINDIR@ replaced, rendered again when BINDIR changes (like the .pc);
# make install puts it in SYSTEMDUNITDIR, make uninstall removes it.
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
UNIT      = $(BUILD)/logcounterd.service
UNIT_DIRS = $(BUILD)/unit-dirs
$(UNIT_DIRS): FORCE
	@mkdir -p $(@D)
	@echo '$(BINDIR)' | cmp -s - $@ 2>/dev/null || echo '$(BINDIR)' > $@
$(UNIT): dist/logcounterd.service.in $(UNIT_DIRS)
	sed -e 's|@BINDIR@|$(BINDIR)|g' $< > $@
all: $(UNIT)
.PHONY: install-unit uninstall-unit
install: install-unit
install-unit: $(UNIT)
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	install -m 644 $(UNIT) $(DESTDIR)$(SYSTEMDUNITDIR)/logcounterd.service
uninstall: uninstall-unit
uninstall-unit:
	rm -f $(DESTDIR)$(SYSTEMDUNITDIR)/logcounterd.service

$(DAEMON_CLIENT): tests/daemon/lcd_client.c tests/daemon/lcd_io.c tests/daemon/lcd_io.h
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c,$^) -lmemcached -pthread

daemon-test: deps
	@$(MAKE) --no-print-directory $(DAEMON) $(DAEMON_CLIENT)
	@BUILD=$(BUILD) tests/daemon_test.sh

# ---- further parts (fuzzing, chaos, peers...) ------------------------------
# Each mk/*.mk adds its own targets; one that needs something built before
# `make test` appends it to TEST_EXTRA.
TEST_EXTRA ?=
include $(sort $(wildcard mk/*.mk))
