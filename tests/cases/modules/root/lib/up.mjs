// ".." inside the root is fine
import { name } from "../lib/util.mjs";
export const up = "up:" + name;
