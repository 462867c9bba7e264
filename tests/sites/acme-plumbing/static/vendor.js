window.vendor = true;
