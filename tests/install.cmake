# Install into a scratch prefix, then build a consumer with find_package()
# and with pkg-config, and run both.
gpufeed_add_script_test(install_consumer SCRIPT install_consumer.sh TIMEOUT 600)
