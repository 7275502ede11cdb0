throw new RangeError("module init failed");
