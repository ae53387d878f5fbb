# mk/ci.mk - make test-build: builds what `make test` runs (the same list
# as its recipe in the Makefile) without running it.  .ci/run builds the
# two sanitizer trees with it in the background while the plain suite
# runs; `make test` afterwards finds them up to date (and still builds
# anything missing, should the two lists ever differ).
.PHONY: test-build
test-build:
	@$(MAKE) --no-print-directory all $(TEST_BIN) $(BUILD)/readme_example $(BENCH_BIN) $(DAEMON_CLIENT) $(TEST_EXTRA)
