throw new Error("on line one");
