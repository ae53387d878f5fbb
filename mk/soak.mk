# mk/soak.mk - make soak: logcounterd under full load with memcached faults
# (tests/soak.sh; SOAK_SECONDS, default 60).
.PHONY: soak
soak: deps
	@$(MAKE) --no-print-directory $(DAEMON) $(CLI) $(DAEMON_CLIENT)
	@BUILD=$(BUILD) SOAK_SECONDS=$(or $(SOAK_SECONDS),60) bash tests/soak.sh
