'use strict';
'use strip';
(function (native) {
    void native;
})
