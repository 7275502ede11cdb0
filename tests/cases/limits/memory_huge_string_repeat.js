// One huge string built inside String.prototype.repeat.
return "ab".repeat(2 ** 27).length;
