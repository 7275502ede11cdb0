// Calling a function a host group does not have names the call and lists what the group has.
await tools.add(1);
tools.missing(2);
