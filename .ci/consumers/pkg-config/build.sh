g++ -std=c++20 app.cpp -o app $(pkg-config --cflags --libs pxl-addons)
