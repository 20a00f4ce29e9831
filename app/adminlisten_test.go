package app

import (
	"net"
	"strings"
	"testing"
)

// TestConfigAdminListen: BOBNET_ADMIN_LISTEN is off by default, taken as
// host:port, and refused at start, naming the variable, when it is not
// host:port, its port is not one, or it would take BOBNET_LISTEN's port.
func TestConfigAdminListen(t *testing.T) {
	t.Parallel()
	c, err := testConfig(t, nil)
	if err != nil || c.AdminListen != "" {
		t.Fatalf("default: %q, %v", c.AdminListen, err)
	}
	for _, good := range []map[string]string{
		{"BOBNET_ADMIN_LISTEN": "127.0.0.1:9090"},
		{"BOBNET_ADMIN_LISTEN": " [::1]:9090 "},
		{"BOBNET_ADMIN_LISTEN": "0.0.0.0:9090", "BOBNET_LISTEN": "0.0.0.0:8080", "BOBNET_API_TOKEN": "t0k"},
		{"BOBNET_ADMIN_LISTEN": "127.0.0.2:8080"}, // the same port on another address
	} {
		c, err := testConfig(t, good)
		if err != nil || c.AdminListen != strings.TrimSpace(good["BOBNET_ADMIN_LISTEN"]) {
			t.Errorf("%v: %q, %v", good, c.AdminListen, err)
		}
	}
	if c, err := testConfig(t, nil, "-admin-listen", "127.0.0.1:9191"); err != nil || c.AdminListen != "127.0.0.1:9191" {
		t.Errorf("flag: %q, %v", c.AdminListen, err)
	}
	for _, tc := range []struct {
		env  map[string]string
		says string
	}{
		{map[string]string{"BOBNET_ADMIN_LISTEN": "9090"}, "not host:port"},
		{map[string]string{"BOBNET_ADMIN_LISTEN": "localhost"}, "not host:port"},
		{map[string]string{"BOBNET_ADMIN_LISTEN": "127.0.0.1:metrics"}, "port is not a number"},
		{map[string]string{"BOBNET_ADMIN_LISTEN": "127.0.0.1:0"}, "port is not a number from 1 to 65535"},
		{map[string]string{"BOBNET_ADMIN_LISTEN": "127.0.0.1:65536"}, "port is not a number from 1 to 65535"},
		{map[string]string{"BOBNET_ADMIN_LISTEN": "127.0.0.1:8080"}, "takes the port of BOBNET_LISTEN"},
		{map[string]string{"BOBNET_ADMIN_LISTEN": "0.0.0.0:8080"}, "takes the port of BOBNET_LISTEN"},
		{map[string]string{"BOBNET_ADMIN_LISTEN": ":8080"}, "takes the port of BOBNET_LISTEN"},
		{map[string]string{"BOBNET_ADMIN_LISTEN": "LOCALHOST:9000", "BOBNET_LISTEN": "localhost:9000"}, "takes the port of BOBNET_LISTEN"},
	} {
		_, err := testConfig(t, tc.env)
		if err == nil || !strings.Contains(err.Error(), "BOBNET_ADMIN_LISTEN: ") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: %v, want an error naming BOBNET_ADMIN_LISTEN saying %q", tc.env, err, tc.says)
		}
	}
}

// TestAdminListenAddressInUseIsAClearError: serve names the admin
// listener's variable when its port is taken.
func TestAdminListenAddressInUseIsAClearError(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = listen("BOBNET_ADMIN_LISTEN", ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "BOBNET_ADMIN_LISTEN: "+ln.Addr().String()+" is already in use") {
		t.Fatalf("err = %v", err)
	}
}
