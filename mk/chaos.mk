# ---- chaos harness (chaos/) ------------------------------------------------
# make chaos   many clients (library threads; processes and connections
#              through logcounterd) against a few counters and tallies while
#              a nemesis injects faults on a seeded schedule, then a checker's
#              report (see docs/testing.md, "Chaos testing").  Settings:
#                CHAOS_SECONDS  at least this long (default 180)
#                CHAOS_MIN_IDS  and until this many ids were acknowledged
#                               (default 1000000)
#                CHAOS_SEED     replay this schedule (default: from the clock)
#                CHAOS_SERVERS  memcached servers, 1..3 (default 1); with 3
#                               the counters spread over them and each
#                               memcached fault hits one (make chaos
#                               CHAOS_SERVERS=3: the multi-server mode)
#                CHAOS_STANDBY  1: logcounterd as a primary and a standby,
#                               with primary-loss and partition faults
#                               (make chaos CHAOS_STANDBY=1: --standby)
#                CHAOS_CLUSTER  1: logcounterd as three nodes on etcd, with
#                               the cluster's faults (--cluster; needs etcd)
#                CHAOS_FLAGS    more options of build/chaos run (--help)
# make chaos-campaign   CAMPAIGN_SEEDS runs (default 30) of CAMPAIGN_SECONDS
#              (default 60) each, seeds from CAMPAIGN_FIRST (default 1),
#              every fault kind, every fourth --standby: one line per seed
#              and a summary (chaos/campaign.sh); exits 1 if any was INVALID.
#              30 x 60 s is about 45 minutes; overnight: CAMPAIGN_SEEDS=300.
# tests/suite_chaos.sh runs a short round in make test.  The owners also
# preload $(FAULTFS_SO) (mk/faultfs.mk) for the disk-full and io-error
# faults.
CHAOS_SRC  = $(filter-out chaos/powercut.c,$(wildcard chaos/*.c)) $(COMMON_SRC)
CHAOS_BIN  = $(BUILD)/chaos
CHAOS_SHIM = $(BUILD)/chaos_powercut.so
CHAOS_SECONDS ?= 180
CHAOS_MIN_IDS ?= 1000000
CHAOS_SEED    ?=
CHAOS_SERVERS ?= 1
CHAOS_STANDBY ?=
CHAOS_CLUSTER ?=
CHAOS_FLAGS   ?=
CAMPAIGN_SEEDS   ?= 30
CAMPAIGN_SECONDS ?= 60
CAMPAIGN_FIRST   ?= 1
TEST_EXTRA += $(CHAOS_BIN) $(CHAOS_SHIM) $(DAEMON)
.PHONY: chaos chaos-campaign

$(CHAOS_BIN): $(CHAOS_SRC) chaos/chaos.h common/common.h $(LIB_SEAM_A)
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) -DLC_TEST_SEAMS -Ichaos -Icommon -o $@ $(CHAOS_SRC) $(LIB_SEAM_A) $(LIBS)

# Preloaded into every owner, sanitizer builds included: built without a
# sanitizer (the runtime is the program's).
$(CHAOS_SHIM): chaos/powercut.c chaos/chaos.h
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) -O2 -g -fPIC -shared -o $@ $< -ldl -pthread

chaos: deps
	@$(MAKE) --no-print-directory $(CHAOS_BIN) $(CHAOS_SHIM) $(DAEMON) $(CLI) $(FAULTFS_SO)
	$(CHAOS_BIN) run --seconds $(CHAOS_SECONDS) --min-ids $(CHAOS_MIN_IDS) --servers $(CHAOS_SERVERS)$(if $(CHAOS_SEED), --seed $(CHAOS_SEED))$(if $(filter 1,$(CHAOS_STANDBY)), --standby)$(if $(filter 1,$(CHAOS_CLUSTER)), --cluster) $(CHAOS_FLAGS)

chaos-campaign: deps
	@$(MAKE) --no-print-directory $(CHAOS_BIN) $(CHAOS_SHIM) $(DAEMON) $(CLI) $(FAULTFS_SO)
	chaos/campaign.sh $(CHAOS_BIN) $(CAMPAIGN_SEEDS) $(CAMPAIGN_SECONDS) $(CAMPAIGN_FIRST) $(CHAOS_FLAGS)
