# peers.mk - the benchmark's peers: Redis INCR and PostgreSQL
# sequences measured beside logcounter in the same run.
#
# $(BUILD)/bench-peers is build/bench with bench/peers/*.c (hiredis, libpq)
# linked in place of bench/nopeers.c.  Only `make bench` builds it, so
# `make test` needs neither the peers' packages nor their headers.
# make bench-peers        installs redis-server, postgresql, libhiredis-dev
#                         and libpq-dev (as root) and builds it; fails, with
#                         the reason, when it cannot (make bench then runs
#                         without the peers, and their rows say why)
# make bench-peers-smoke  the smoke run (a fraction of a second per point)
#                         with the peers started and checked too
PEERS_PKGS      = redis-server postgresql libhiredis-dev libpq-dev
BENCH_PEERS_BIN = $(BUILD)/bench-peers
PEERS_SRC       = $(filter-out bench/nopeers.c,$(BENCH_SRC)) $(wildcard bench/peers/*.c)
.PHONY: bench-peers bench-peers-smoke

# pkg-config runs only when this is built (in the recipe, not at parse time).
$(BENCH_PEERS_BIN): $(PEERS_SRC) $(wildcard bench/*.h bench/peers/*.h) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $$(pkg-config --cflags hiredis libpq) $(LDFLAGS) \
	  -Ibench -Icommon -o $@ $(PEERS_SRC) $(LIB_A) $(LIBS) $$(pkg-config --libs hiredis libpq) -lssl -lcrypto -lm

bench-peers:
	@tests/deps.sh $(PEERS_PKGS)
	@$(MAKE) --no-print-directory $(BENCH_PEERS_BIN)

bench-peers-smoke: deps bench-peers
	@$(MAKE) --no-print-directory $(DAEMON)
	@BUILD=$(BUILD) bench/run.sh --smoke --peers
