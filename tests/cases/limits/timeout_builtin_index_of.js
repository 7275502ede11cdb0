// One long Array.prototype.indexOf over a huge array-like.
return Array.prototype.indexOf.call({ length: 2 ** 53 - 1 }, 1);
