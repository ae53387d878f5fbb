# mk/fuzz.mk - coverage-guided fuzzing of every parser with libFuzzer
# (fuzz/).
#
# make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS="proto record name cli"]
#     installs clang and libclang-rt-14-dev if missing, builds each target
#     with clang -fsanitize=fuzzer,address,undefined into $(FUZZ_BUILD),
#     runs each for FUZZ_SECONDS (one after the other) on its seed corpus,
#     regression corpus and dictionary, and prints executions per target.
#     New inputs go to $(FUZZ_BUILD)/corpus/<target>, crashes to
#     $(FUZZ_BUILD)/crashes/<target>/ (fix, then add to fuzz/regress/).
# make test builds $(BUILD)/fuzz/replay_<target> (the same targets with
#     the project's compiler and fuzz/replay_main.c instead of libFuzzer);
#     tests/suite_fuzz.sh replays fuzz/corpus and fuzz/regress with them.

FUZZ_TARGETS ?= proto record name cli auth binary
FUZZ_SECONDS ?= 60
FUZZ_BUILD   ?= build-fuzz
FUZZ_CC      ?= clang
FUZZ_SAN      = -fsanitize=address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
FUZZ_CFLAGS  ?= -O1 -g
FUZZ_DEPS     = fuzz/fuzz.h include/logcounter.h $(wildcard src/*.h src/*/*.h)
# The proto and name targets fuzz the daemon's request parser too.
FUZZ_PROTO    = -Itools/logcounterd tools/logcounterd/lcd_proto.c tools/logcounterd/lcd_meta.c
# The auth target: the handshake's and the auth/rights files' parsers.
FUZZ_AUTH     = $(FUZZ_PROTO) tools/logcounterd/lcd_auth_parse.c
# The binary target: the binary protocol's frames (and SASL PLAIN's message).
FUZZ_BINARY   = $(FUZZ_PROTO) tools/logcounterd/lcd_binary.c
FUZZ_BINARY_DEPS = tools/logcounterd/lcd_binary.c tools/logcounterd/lcd_binary.h

# The CLI target links every CLI file but main's, with cli_open stubbed.
FUZZ_CLI_SRC  = $(filter-out tools/cli_main.c,$(CLI_SRC))
FUZZ_CLI_DEPS = $(CLI_SRC) tools/cli.h
FUZZ_CLI_LD   = -Wl,--wrap=cli_open

FUZZ_REPLAY   = $(FUZZ_TARGETS:%=$(BUILD)/fuzz/replay_%)
FUZZ_BIN      = $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
FUZZ_LIB_OBJ  = $(LIB_SRC:src/%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_LIB_A    = $(FUZZ_BUILD)/liblogcounter.a
TEST_EXTRA   += $(FUZZ_REPLAY)

.PHONY: fuzz fuzz-build fuzz-replay

fuzz:
	@tests/deps.sh clang libclang-rt-14-dev
	@$(MAKE) --no-print-directory fuzz-build
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  fuzz/run.sh $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_BIN)

# Replays the committed corpora without libFuzzer (what make test does).
fuzz-replay: $(FUZZ_REPLAY)
	@BUILD=$(BUILD) bash tests/suite_fuzz.sh

# ---- libFuzzer builds (clang) ----
$(FUZZ_BUILD)/obj/%.o: src/%.c include/logcounter.h $(wildcard src/*.h src/*/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(LC_CFLAGS) $(FUZZ_CFLAGS) $(FUZZ_SAN) \
	  -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_LIB_A): $(FUZZ_LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_cli: FUZZ_EXTRA = -Itools $(FUZZ_CLI_SRC) $(FUZZ_CLI_LD)
$(FUZZ_BUILD)/fuzz_proto $(FUZZ_BUILD)/fuzz_name: FUZZ_EXTRA = $(FUZZ_PROTO)
$(FUZZ_BUILD)/fuzz_auth: FUZZ_EXTRA = $(FUZZ_AUTH)
$(FUZZ_BUILD)/fuzz_binary: FUZZ_EXTRA = $(FUZZ_BINARY)
$(FUZZ_BUILD)/fuzz_binary: $(FUZZ_BINARY_DEPS)
$(FUZZ_BUILD)/fuzz_cli: $(FUZZ_CLI_DEPS)
$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_DEPS) $(FUZZ_LIB_A)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(LC_CFLAGS) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer \
	  -o $@ $< $(FUZZ_EXTRA) $(FUZZ_LIB_A) $(LIBS)

# ---- replay builds (the project's compiler and flags) ----
$(BUILD)/fuzz/replay_cli: REPLAY_EXTRA = -Itools $(FUZZ_CLI_SRC) $(FUZZ_CLI_LD)
$(BUILD)/fuzz/replay_proto $(BUILD)/fuzz/replay_name: REPLAY_EXTRA = $(FUZZ_PROTO)
$(BUILD)/fuzz/replay_auth: REPLAY_EXTRA = $(FUZZ_AUTH)
$(BUILD)/fuzz/replay_binary: REPLAY_EXTRA = $(FUZZ_BINARY)
$(BUILD)/fuzz/replay_binary: $(FUZZ_BINARY_DEPS)
$(BUILD)/fuzz/replay_auth $(FUZZ_BUILD)/fuzz_auth: tools/logcounterd/lcd_auth_parse.c tools/logcounterd/lcd_auth.h
$(BUILD)/fuzz/replay_cli: $(FUZZ_CLI_DEPS)
$(BUILD)/fuzz/replay_%: fuzz/fuzz_%.c fuzz/replay_main.c $(FUZZ_DEPS) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< fuzz/replay_main.c \
	  $(REPLAY_EXTRA) $(LIB_A) $(LIBS)
