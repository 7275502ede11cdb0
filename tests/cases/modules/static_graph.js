// An entry module importing a graph with a cycle; its default export is the value.
import { double, name } from "./lib/util.mjs";
import { viaA } from "/lib/b.mjs";
import { up } from "./lib/up.mjs";
export default { v: double(21), name, cycle: viaA(), up };
