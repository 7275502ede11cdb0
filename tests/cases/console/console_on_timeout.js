console.log("logged before the loop");
for (;;) {}
