let x = 0;
for (;;) { x++; }
