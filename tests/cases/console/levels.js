console.log("l", 1);
console.info("i");
console.warn("w");
console.error("e");
console.debug("d");
return 0;
