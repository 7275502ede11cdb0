// One long Array.prototype.join over a huge sparse array (no memory growth).
return new Array(2 ** 32 - 1).join("").length;
