# ---- deep pipelines through logcounterd -----------------------------------
# tests/daemon/lcd_pipe: the pipelining, never-reading and libmemcached
# NOREPLY+BUFFER_REQUESTS clients of tests/suite_pipeline.sh (make test).
PIPE_CLIENT = $(BUILD)/tests/lcd_pipe
TEST_EXTRA += $(PIPE_CLIENT)

$(PIPE_CLIENT): tests/daemon/lcd_pipe.c tests/daemon/lcd_io.c tests/daemon/lcd_io.h
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c,$^) -lmemcached -pthread
