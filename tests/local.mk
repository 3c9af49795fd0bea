# tests/: cmocka tests (unit and integration) and shell tests of the CLI.
if ENABLE_TESTS
TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(LMDB_CFLAGS) $(MSGPACK_CFLAGS)
TEST_LDADD = libjbcore.la $(CMOCKA_LIBS) $(LMDB_LIBS) $(MSGPACK_LIBS) $(UUID_LIBS)
endif
