# mk/faultfs.mk - $(BUILD)/tests/libfaultfs.so, the LD_PRELOAD shim that
# fails writes, syncs and creates beneath LevelDB on command
# (tests/shim/faultfs.c says how; tests/shim/faultfs_test.sh is its
# self-test).  make test builds it.  It is preloaded into sanitizer builds
# too, so it is built without a sanitizer (the runtime is the program's).
FAULTFS_SO = $(BUILD)/tests/libfaultfs.so
TEST_EXTRA += $(FAULTFS_SO)

$(FAULTFS_SO): tests/shim/faultfs.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -D_GNU_SOURCE -O2 -g -fPIC -shared -o $@ $< -ldl -pthread
