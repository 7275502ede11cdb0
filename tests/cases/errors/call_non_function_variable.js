// Calling a variable that holds no function names the variable.
const count = 3;
function run() {
  return count();
}
run();
