// Logging on after the console limit does not grow the output or change the code.
for (let i = 0; i < 100000; i++) console.log("line " + i);
return "done";
