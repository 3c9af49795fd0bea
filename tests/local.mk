# tests/: cmocka tests (unit and integration) and shell tests of the CLI.
# (JB_TEST_* names: automake reads any X_LDADD as the LDADD of a program "X".)
if ENABLE_TESTS
JB_TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(LMDB_CFLAGS) $(MSGPACK_CFLAGS)
JB_TEST_LIBS = libjbcore.la $(CMOCKA_LIBS) $(LMDB_LIBS) $(MSGPACK_LIBS) $(UUID_LIBS)
endif
