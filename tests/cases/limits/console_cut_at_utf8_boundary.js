// 10 two-byte chars per line; the limit of 25 bytes falls inside the third char of line 2.
for (let i = 0; i < 5; i++) console.log("\u00e9".repeat(10));
return 1;
