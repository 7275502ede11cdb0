throw 42;
