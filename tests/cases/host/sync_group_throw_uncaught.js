sync.fail();
