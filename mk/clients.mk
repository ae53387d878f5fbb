# ---- stock clients against the daemon (tests/suite_clients.sh) -------------
# build/tests/lcd_mget: one libmemcached memcached_mget of many keys
# (libmemcached's own multi-get, as C services call it).
LCD_MGET = $(BUILD)/tests/lcd_mget
TEST_EXTRA += $(LCD_MGET)

$(LCD_MGET): tests/daemon/lcd_mget.c
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< -lmemcached

# build/tests/lc_remote: the library's remote mode (over TLS) from many
# threads sharing one handle (tests/suite_tls.sh).
LC_REMOTE = $(BUILD)/tests/lc_remote
TEST_EXTRA += $(LC_REMOTE)

$(LC_REMOTE): tests/daemon/lc_remote.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(LIBS)
