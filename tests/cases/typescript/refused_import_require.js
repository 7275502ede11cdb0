import fs = require("fs");
return 1;
