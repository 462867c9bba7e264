window.app = true;
