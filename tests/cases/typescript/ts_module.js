import { double, type Pair } from "./util.ts";
const p: Pair = [double(1), double(2)];
export default p;
