# mk/admin.mk - the admin suite's helper (tests/suite_admin.sh, make test):
# $(BUILD)/tests/lc_plant writes many records into a closed log quickly.
PLANT = $(BUILD)/tests/lc_plant
TEST_EXTRA += $(PLANT)

$(PLANT): tests/daemon/lc_plant.c tests/plant.c tests/plant.h $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LC_CFLAGS) $(CFLAGS) $(LDFLAGS) -Itests -o $@ $< tests/plant.c $(LIB_A) $(LIBS)
